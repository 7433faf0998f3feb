//go:build unix

package bundle

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With a umask of 0 (as some CI runners and containers have), a bundle's
// directories are still 0700 and its files 0600: failures/, the spec's
// directory, a second namespace's below it, and every file, whoever
// writes it (Write, WriteFile as harness/suite and a suite's own Collect do).
func TestBundleIsPrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	artifacts := t.TempDir()
	log := filepath.Join(artifacts, "manager.log")
	if err := os.WriteFile(log, []byte(`{"ts":1,"msg":"x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := Dir(artifacts, "widgets keep a secret")
	b := Bundle{Config: fakeAPIServer(t), Namespace: "ns", Start: time.Unix(0, 0), End: time.Now(),
		Logs: []Log{{Name: "manager", Path: log}}}
	if err := b.Write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(context.Background(), filepath.Join(dir, "ns-2")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, "manager-pod-1.log", []byte("a line\n")); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, filepath.Join(artifacts, FailuresDir))
}

// checkPrivate fails for each directory below and including root that is
// not 0700 and each file that is not 0600.
func checkPrivate(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := FileMode
		if d.IsDir() {
			want = DirMode
		} else {
			n++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %s, want %s", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 7 {
		t.Errorf("%d files below %s, want objects.yaml, events.txt and manager.log twice and manager-pod-1.log", n, root)
	}
}

// A failures/ another user owns, or others may write, is refused: they
// could have planted what a bundle's files are written through. One that
// is the caller's and others may only read (an older kubeharness's 0755)
// is narrowed to 0700.
func TestOpenDirRefusesAFailuresDirOthersMayWrite(t *testing.T) {
	artifacts := t.TempDir()
	failures := filepath.Join(artifacts, FailuresDir)
	if err := os.Mkdir(failures, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := OpenDir(Dir(artifacts, "spec"))
	if err != nil {
		t.Fatalf("OpenDir below the caller's own failures/ (0755): %v", err)
	}
	_ = root.Close()
	if fi, err := os.Stat(failures); err != nil || fi.Mode().Perm() != DirMode {
		t.Errorf("failures/ of mode 0755 was not narrowed to 0700: %v %v", fi.Mode(), err)
	}

	if err := os.Chmod(failures, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(Dir(artifacts, "spec"), ObjectsFile, []byte("x")); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("WriteFile below a world-writable failures/: got %v, want a refusal that says others may write it", err)
	}
	if err := os.Chmod(failures, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(Dir(artifacts, "spec"), 0o757); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(Dir(artifacts, "spec"), ObjectsFile, []byte("x")); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("WriteFile into a world-writable bundle directory: got %v, want a refusal", err)
	}

	if os.Geteuid() != 0 {
		t.Skip("giving failures/ to another user needs root")
	}
	if err := os.Chown(failures, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(Dir(artifacts, "other"), ObjectsFile, []byte("x")); err == nil || !strings.Contains(err.Error(), "uid 4321") {
		t.Errorf("WriteFile below another user's failures/: got %v, want a refusal naming the owner", err)
	}
}
