package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// symlinkOrSkip makes a symbolic link, or skips where this user may not
// (Windows without the privilege).
func symlinkOrSkip(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
}

// Someone who could write a shared $ARTIFACTS planted a link named
// objects.yaml in a bundle's directory, pointing at a file of the user
// the suite runs as: writing the bundle replaces the link and leaves the
// file alone.
func TestWriteDoesNotFollowAPlantedSymlink(t *testing.T) {
	tmp := t.TempDir()
	victim := filepath.Join(tmp, "authorized_keys")
	if err := os.WriteFile(victim, []byte("ssh-ed25519 AAAA the user's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := Dir(filepath.Join(tmp, "artifacts"), "widgets keep a secret")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	symlinkOrSkip(t, victim, filepath.Join(dir, ObjectsFile))
	symlinkOrSkip(t, victim, filepath.Join(dir, "manager.log"))

	b := Bundle{Config: fakeAPIServer(t), Namespace: "ns", Start: time.Now(), End: time.Now()}
	if err := b.Write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, "manager.log", []byte("a line\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "ssh-ed25519 AAAA the user's own\n" {
		t.Errorf("writing the bundle wrote through the planted link into %s:\n%s", victim, got)
	}
	for _, name := range []string{ObjectsFile, "manager.log"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() {
			t.Errorf("%s is %s, want the bundle's own regular file in place of the link", name, fi.Mode())
		}
	}
}

// A link where a bundle's directory (or failures/) is to be is refused,
// not written through; so is a name that leads out of the bundle.
func TestOpenDirRefusesALinkedDirectory(t *testing.T) {
	tmp := t.TempDir()
	elsewhere := filepath.Join(tmp, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(tmp, "artifacts")
	if err := os.MkdirAll(filepath.Join(artifacts, FailuresDir), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := Dir(artifacts, "spec")
	symlinkOrSkip(t, elsewhere, dir)
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("OpenDir of a link: got %v, want a refusal naming the link", err)
	}
	if err := WriteFile(dir, ObjectsFile, []byte("x")); err == nil {
		t.Error("WriteFile wrote through a linked bundle directory")
	}

	other := filepath.Join(tmp, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	symlinkOrSkip(t, elsewhere, filepath.Join(other, FailuresDir))
	if err := WriteFile(Dir(other, "spec"), ObjectsFile, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("WriteFile below a linked failures/: got %v, want a refusal naming the link", err)
	}
	if err := WriteFile(Dir(artifacts, "fine"), "../../escaped", []byte("x")); err == nil {
		t.Error("WriteFile wrote a name leading out of the bundle")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("something was written through a link: %v", entries)
	}
}
