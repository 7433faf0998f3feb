package rbacaudit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLogFiles: a file is itself, a directory its *.log files in order, a
// directory without one is a NoLogsError naming it.
func TestLogFiles(t *testing.T) {
	dir, empty := t.TempDir(), t.TempDir()
	for _, name := range []string{"b.log", "a.log", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	single := filepath.Join(empty, "one.audit")
	if err := os.WriteFile(single, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LogFiles(single, dir)
	want := []string{single, filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("LogFiles: %q, %v; want %q", got, err, want)
	}
	noLogs := t.TempDir()
	var e *NoLogsError
	if _, err := LogFiles(dir, noLogs); !errors.As(err, &e) || e.Dir != noLogs {
		t.Errorf("a directory without logs: %v; want a NoLogsError naming %s", err, noLogs)
	}
	if _, err := LogFiles(filepath.Join(dir, "missing.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestReadLog: a log's events become requests; an empty log has none; a
// broken one is an error naming the file.
func TestReadLog(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	event := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete",` +
		`"verb":"get","requestURI":"/api/v1/namespaces/sys/configmaps/x","user":{"username":"` + manager + `"},` +
		`"objectRef":{"resource":"configmaps","namespace":"sys","name":"x","apiVersion":"v1"},"responseStatus":{"code":200}}` + "\n"
	reqs, err := ReadLog(write("one.log", event))
	if err != nil || len(reqs) != 1 || reqs[0].User != manager {
		t.Errorf("ReadLog: %+v, %v; want one request of %s", reqs, err, manager)
	}
	if reqs, err := ReadLog(write("empty.log", "")); err != nil || len(reqs) != 0 {
		t.Errorf("an empty log: %+v, %v", reqs, err)
	}
	broken := write("broken.log", "{not json\n")
	if _, err := ReadLog(broken); err == nil || !strings.Contains(err.Error(), broken) {
		t.Errorf("a broken log: %v; want an error naming %s", err, broken)
	}
}
