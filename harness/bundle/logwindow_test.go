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
