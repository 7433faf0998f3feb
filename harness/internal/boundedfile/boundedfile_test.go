package boundedfile

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
