package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
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
		if at, res, ok := lineTime(sc.Bytes()); ok {
			// A time written to the second (controller-runtime's
			// production logger, zap's RFC 3339) stands for that whole
			// second: a line of it is in the window when any of it is.
			in = at.Add(res).After(start) && !at.After(end)
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

// lineTime is the time of a JSON log line's "ts" (an RFC 3339 string, or
// seconds since the epoch) and its resolution: how much time the written
// value stands for (a second for "…T07:12:25Z", a millisecond for
// "…T07:12:25.843Z").
func lineTime(line []byte) (t time.Time, resolution time.Duration, ok bool) {
	var l struct {
		TS json.RawMessage `json:"ts"`
	}
	if json.Unmarshal(line, &l) != nil || len(l.TS) == 0 {
		return time.Time{}, 0, false
	}
	var s string
	if json.Unmarshal(l.TS, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, 0, false
		}
		resolution = time.Second
		if _, frac, found := strings.Cut(s, "."); found {
			for _, r := range frac {
				if r < '0' || r > '9' || resolution == time.Nanosecond {
					break
				}
				resolution /= 10
			}
		}
		return t, resolution, true
	}
	var secs float64
	if json.Unmarshal(l.TS, &secs) == nil {
		return time.Unix(0, int64(secs*float64(time.Second))), time.Nanosecond, true
	}
	return time.Time{}, 0, false
}
