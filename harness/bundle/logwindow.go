package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// LogWindow returns the lines of a JSON log file (one object per line, its
// time in "ts" as RFC 3339 or seconds since the epoch) written from start
// to end, inclusive. A line without a time (a panic's stack, say) goes with
// the line before it. Every Ginkgo process can read the manager's log this
// way, whichever process runs the manager.
func LogWindow(path string, start, end time.Time) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out bytes.Buffer
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if at, ok := lineTime(sc.Bytes()); ok {
			in = !at.Before(start) && !at.After(end)
		}
		if in {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return out.Bytes(), fmt.Errorf("reading %s: %w", path, err)
	}
	return out.Bytes(), nil
}

func lineTime(line []byte) (time.Time, bool) {
	var l struct {
		TS json.RawMessage `json:"ts"`
	}
	if json.Unmarshal(line, &l) != nil || len(l.TS) == 0 {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(l.TS, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	var secs float64
	if json.Unmarshal(l.TS, &secs) == nil {
		return time.Unix(0, int64(secs*float64(time.Second))), true
	}
	return time.Time{}, false
}
