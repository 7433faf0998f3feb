package bundle

import (
	"os"
	"path/filepath"
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
