package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(small, 4); err != nil || string(got) != "data" {
		t.Errorf("Read(a 4-byte file, 4) = %q, %v", got, err)
	}
	if _, err := Read(small, 3); err == nil || !strings.Contains(err.Error(), "at most 3 bytes") {
		t.Errorf("Read(a 4-byte file, 3) = %v, want a refusal naming the limit", err)
	}
	if _, err := Read(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Read(a directory) = %v, want a refusal", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err == nil {
		if _, err := Read(link, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read(a symbolic link) = %v, want a refusal", err)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(a missing file) = %v, want fs.ErrNotExist", err)
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := Read(name, 1<<10); err != nil || string(got) != data {
			t.Errorf("after Write(%q): Read = %q, %v", data, got, err)
		}
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %d entries (%v), want only the file: no temporary file left", len(entries), err)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}
