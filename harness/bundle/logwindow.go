package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Bounds of a log excerpt, so that neither the memory nor the time
// LogWindow takes grows with the log: a controller that logs in a loop
// writes gigabytes, and a bundle is written while the suite waits.
const (
	// LogScanLimit is how much of a log's end LogWindow reads; what comes
	// before it is not looked at, and the excerpt says so when the
	// spec's window may reach back into it.
	LogScanLimit = 16 << 20
	// LogExcerptLimit bounds the lines LogWindow returns: of a window
	// with more, the latest are kept (those nearest the failure), and the
	// excerpt says how many earlier ones were cut.
	LogExcerptLimit = 4 << 20
	// LogLineLimit bounds one line of an excerpt; the rest of a longer
	// one is cut, and the line says by how much.
	LogLineLimit = 256 << 10
)

// LogWindow returns the lines of a JSON log file (one object per line, its
// time in "ts" as RFC 3339 or seconds since the epoch) written from start
// to end, inclusive. A line without a time (a panic's stack, say) goes with
// the line before it. Every Ginkgo process can read the manager's log this
// way, whichever process runs the manager.
//
// It reads only a regular file (a FIFO or a device is refused without
// waiting on it), and only its last LogScanLimit bytes as they were when
// opened; it returns at most LogExcerptLimit bytes of lines, the latest,
// each cut at LogLineLimit, plus a line starting "# kubeharness:" above
// them for each of these bounds the excerpt met.
func LogWindow(path string, start, end time.Time) ([]byte, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	size := fi.Size()
	offset := max(0, size-LogScanLimit)
	r := bufio.NewReaderSize(io.NewSectionReader(f, offset, size-offset), 64<<10)
	var (
		w    excerpt
		line = make([]byte, 0, 4<<10)
		in   bool
		// firstAfterStart: the first line with a time read ends after
		// start, so lines before offset may be in the window too.
		sawTime, firstAfterStart bool
	)
	if offset > 0 {
		// Unless the byte before the read ends a line, the read begins
		// inside one: begin at the next.
		before := make([]byte, 1)
		if _, err := f.ReadAt(before, offset-1); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if before[0] != '\n' {
			if _, _, err := readLine(r, line[:0]); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
		}
	}
	for {
		var cut int
		var rerr error
		line, cut, rerr = readLine(r, line[:0])
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return w.bytes(path, false), fmt.Errorf("reading %s: %w", path, rerr)
		}
		if errors.Is(rerr, io.EOF) && len(line) == 0 && cut == 0 {
			break
		}
		if at, res, ok := lineTime(line); ok {
			// A time written to the second (controller-runtime's
			// production logger, zap's RFC 3339) stands for that whole
			// second: a line of it is in the window when any of it is.
			in = at.Add(res).After(start) && !at.After(end)
			if !sawTime {
				sawTime, firstAfterStart = true, at.Add(res).After(start)
			}
		}
		if in {
			w.add(line, cut)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	return w.bytes(path, offset > 0 && (!sawTime || firstAfterStart)), nil
}

// readLine reads the next line of r into buf, without its newline (nor a
// carriage return before it), keeping at most LogLineLimit bytes of it;
// cut is how many more it had. err is io.EOF for the last line when it has
// no newline (or there is none).
func readLine(r *bufio.Reader, buf []byte) (line []byte, cut int, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if err == nil {
			chunk = bytes.TrimSuffix(chunk[:len(chunk)-1], []byte{'\r'})
		}
		keep := min(len(chunk), LogLineLimit-len(buf))
		buf = append(buf, chunk[:keep]...)
		cut += len(chunk) - keep
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, cut, err
		}
	}
}

// excerpt keeps the latest lines added, at most 2×LogExcerptLimit bytes
// while lines are added and LogExcerptLimit at the end, counting those it
// drops.
type excerpt struct {
	buf                     []byte
	droppedLines, droppedBy int
}

func (w *excerpt) add(line []byte, cut int) {
	w.buf = append(w.buf, line...)
	if cut > 0 {
		w.buf = fmt.Appendf(w.buf, " … (%d bytes of this line cut)", cut)
	}
	w.buf = append(w.buf, '\n')
	if len(w.buf) > 2*LogExcerptLimit {
		w.trim()
	}
}

// trim drops the earliest whole lines, leaving at most LogExcerptLimit
// bytes; it moves what is kept to the front, so the buffer never grows
// past 2×LogExcerptLimit and a line.
func (w *excerpt) trim() {
	if len(w.buf) <= LogExcerptLimit {
		return
	}
	from := len(w.buf) - LogExcerptLimit
	// Keep whole lines: begin after the newline at or after from-1.
	if i := bytes.IndexByte(w.buf[from-1:], '\n'); i >= 0 {
		from += i
	} else {
		from = len(w.buf)
	}
	w.droppedLines += bytes.Count(w.buf[:from], []byte{'\n'})
	w.droppedBy += from
	n := copy(w.buf, w.buf[from:])
	w.buf = w.buf[:n]
}

// bytes is the excerpt, a line above it for each bound it met: that the
// log's start was not read (when the window may reach into it), and how
// many of the window's earlier lines were cut.
func (w *excerpt) bytes(path string, unread bool) []byte {
	w.trim()
	var head []byte
	if unread {
		head = fmt.Appendf(head, "# kubeharness: only the last %d MiB of %s were read; lines of the window before them are not here\n",
			LogScanLimit>>20, path)
	}
	if w.droppedLines > 0 {
		head = fmt.Appendf(head, "# kubeharness: %d earlier lines of the window (%d bytes) were cut; these are its last %d MiB\n",
			w.droppedLines, w.droppedBy, LogExcerptLimit>>20)
	}
	if len(head) == 0 {
		return w.buf
	}
	return append(head, w.buf...)
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

// openRegular opens the file at path for reading, and refuses what is not
// a regular file (a FIFO, a device, a directory), which would never end or
// never answer: it checks what path names before opening it, and what
// was opened after, in case it was swapped in between; openFlags keep
// the opening itself from waiting.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi)
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func notRegular(path string, fi os.FileInfo) error {
	return fmt.Errorf("log %s is not a regular file but %s: a bundle reads lines only from the file a process writes its log to; name that file in the bundle's Logs", path, ownership.KindOf(fi.Mode()))
}
