package bundle

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLogWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manager.log")
	log := `{"ts":"2026-01-02T10:00:00.100Z","msg":"before"}
{"ts":"2026-01-02T10:00:01.000Z","msg":"first"}
panic: a stack line that goes with first
{"ts":1767348001.5,"msg":"epoch seconds"}
not json, no time: goes with the line before
{"ts":"2026-01-02T10:00:03Z","msg":"after"}
stack of after
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 10, 0, 1, 0, time.UTC)
	got, err := LogWindow(path, start, start.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ts":"2026-01-02T10:00:01.000Z","msg":"first"}
panic: a stack line that goes with first
{"ts":1767348001.5,"msg":"epoch seconds"}
not json, no time: goes with the line before
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := LogWindow(filepath.Join(t.TempDir(), "missing.log"), start, start); err == nil {
		t.Error("a missing file gave no error")
	}
}

// A time written to the second (controller-runtime's production logger)
// stands for the whole second: a line of the second a spec began in is
// the spec's, though its written time is before the spec's start. A
// millisecond time is compared to the millisecond.
func TestLogWindowTakesATimeAtItsResolution(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manager.log")
	log := `{"ts":"2026-11-27T07:12:24Z","msg":"the second before"}
{"ts":"2026-11-27T07:12:25.842Z","msg":"a millisecond before"}
{"ts":"2026-11-27T07:12:25Z","msg":"Defaulting for Notice"}
{"ts":"2026-11-27T07:12:26Z","msg":"after"}
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 27, 7, 12, 25, 843_000_000, time.UTC)
	got, err := LogWindow(path, start, start.Add(43*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ts":"2026-11-27T07:12:25Z","msg":"Defaulting for Notice"}` + "\n"; string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// logLine is a manager's log line at t, padded to about size bytes.
func logLine(t time.Time, msg string, size int) string {
	l := `{"ts":"` + t.UTC().Format(time.RFC3339Nano) + `","msg":"` + msg + `","pad":"`
	return l + strings.Repeat("x", max(0, size-len(l)-3)) + `"}` + "\n"
}

// A log of gigabytes (a sparse file here: 8 GiB of nothing, then the
// spec's lines) is read from its end: the excerpt holds the spec's lines,
// says the rest was not read, and took no more than the bounds to make.
func TestLogWindowReadsAHugeLogFromItsEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manager.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const hole = 8 << 30
	if err := f.Truncate(hole); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", hole, err)
	}
	start := time.Date(2026, 1, 2, 10, 0, 1, 0, time.UTC)
	tail := "\n" + logLine(start.Add(-time.Second), "before the spec", 0) +
		logLine(start, "the spec's first line", 0) + logLine(start.Add(time.Second), "the spec's last line", 0)
	if _, err := f.WriteAt([]byte(tail), hole); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := LogWindow(path, start, start.Add(time.Second))
	if err != nil {
		t.Fatalf("LogWindow of an 8 GiB log: %v", err)
	}
	if len(got) > LogExcerptLimit+1<<10 {
		t.Errorf("the excerpt has %d bytes, more than LogExcerptLimit (%d) and a note", len(got), LogExcerptLimit)
	}
	text := string(got)
	for _, want := range []string{"the spec's first line", "the spec's last line"} {
		if !strings.Contains(text, want) {
			t.Errorf("the excerpt lacks %q:\n%.2000s", want, text)
		}
	}
	if strings.Contains(text, "before the spec") || strings.Contains(text, "only the last") {
		t.Errorf("the excerpt has a line before the spec, or says lines before the read may be missing when the read began before the spec:\n%.2000s", text)
	}
}

// A spec's window holding more lines than an excerpt may (a controller
// logging in a loop for the whole spec, more than LogScanLimit of it):
// the excerpt keeps the latest LogExcerptLimit bytes of whole lines, and
// says what it cut and that the log's start was not read.
func TestLogWindowBoundsTheExcerpt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manager.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	w := bufio.NewWriter(f)
	const lineSize = 200
	n := (LogScanLimit + 4<<20) / lineSize
	for i := range n {
		_, _ = w.WriteString(logLine(start.Add(time.Duration(i)*time.Microsecond), fmt.Sprintf("reconciling %d", i), lineSize))
	}
	// A line longer than LogLineLimit, then the last.
	_, _ = w.WriteString(logLine(start.Add(time.Duration(n)*time.Microsecond), "a long one", 2*LogLineLimit))
	_, _ = w.WriteString(logLine(start.Add(time.Duration(n+1)*time.Microsecond), "the last", 0))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := LogWindow(path, start, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > LogExcerptLimit+1<<10 {
		t.Fatalf("the excerpt has %d bytes, more than LogExcerptLimit (%d) and its notes", len(got), LogExcerptLimit)
	}
	text := string(got)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "# kubeharness: only the last 16 MiB of ") ||
		!strings.HasPrefix(lines[1], "# kubeharness: ") || !strings.Contains(lines[1], "earlier lines of the window") {
		t.Errorf("the excerpt does not begin by saying what it left out:\n%.500s", text)
	}
	if !strings.Contains(lines[len(lines)-1], `"msg":"the last"`) {
		t.Errorf("the excerpt does not end with the log's last line: %.300s", lines[len(lines)-1])
	}
	long := lines[len(lines)-2]
	if !strings.Contains(long, `"msg":"a long one"`) || !strings.HasSuffix(long, "bytes of this line cut)") || len(long) > LogLineLimit+100 {
		t.Errorf("the long line is not cut at LogLineLimit, saying so: %d bytes, ending %q", len(long), long[max(0, len(long)-80):])
	}
	for _, l := range lines[2:] {
		if !strings.HasPrefix(l, `{"ts":`) {
			t.Fatalf("the excerpt holds a part of a line: %.200s", l)
		}
	}
}

// A log that is not a regular file is refused: a directory here (a FIFO
// and a device on Unix, in logwindow_unix_test.go).
func TestLogWindowRefusesWhatIsNotARegularFile(t *testing.T) {
	_, err := LogWindow(t.TempDir(), time.Now(), time.Now())
	if err == nil || !strings.Contains(err.Error(), "not a regular file but a directory") {
		t.Errorf("LogWindow of a directory: got %v, want a refusal", err)
	}
}

// The read of a log's end that begins exactly at a line's start keeps
// that line.
func TestLogWindowKeepsALineTheReadBeginsAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manager.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	const lineSize = 256
	w := bufio.NewWriter(f)
	for range 1000 {
		_, _ = w.WriteString(logLine(start.Add(-time.Hour), "before", lineSize))
	}
	_, _ = w.WriteString(logLine(start, "the first line read", lineSize))
	for range LogScanLimit/lineSize - 1 {
		_, _ = w.WriteString(logLine(start.Add(time.Hour), "after", lineSize))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := LogWindow(path, start, start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "the first line read") {
		t.Errorf("the line the read began at is missing:\n%.1000s", got)
	}
}
