//go:build unix

package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeharness/kubeharness/harness/internal/proctest"
)

// TestWriteRefusesDirectoriesOthersMayWrite: a run directory in a
// directory others may write (a shared $ARTIFACTS) is refused, as they
// could put a link in place of it or of its report directory; a sticky
// one (/tmp) of the caller's or root's is not.
func TestWriteRefusesDirectoriesOthersMayWrite(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := runDir(t, shared, "run")
	chmod := func(mode os.FileMode) {
		if err := os.Chmod(shared, mode); err != nil {
			t.Fatal(err)
		}
	}
	chmod(0o777)
	_, err := Write(dir, RenderOptions{})
	wantRefused(t, err, "refusing to write the report into "+filepath.Join(dir, OutDir), shared+" (mode drwxrwxrwx) is writable by others",
		"run `chmod go-w "+shared+"`", "pass --out")
	if _, err := os.Lstat(filepath.Join(dir, OutDir)); !os.IsNotExist(err) {
		t.Errorf("Write made %s (%v) before it refused", filepath.Join(dir, OutDir), err)
	}
	err = writeAttempt(filepath.Join(dir, AttemptsDir), "2", mkSuite(t, 1, mkSpec("a")))
	wantRefused(t, err, "is writable by others")

	chmod(0o777 | os.ModeSticky)
	if _, err := Write(dir, RenderOptions{}); err != nil {
		t.Errorf("a run directory in a sticky directory: %v", err)
	}
}

// TestWriteRefusesARunDirectoryOfAnotherUser: a run directory another
// user owns gets no page (the page would show them the caller's source
// lines); the error says to pass --out, and with --out the page is
// written there.
func TestWriteRefusesARunDirectoryOfAnotherUser(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	dir := runDir(t, t.TempDir(), "theirs")
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	_, err := Write(dir, RenderOptions{})
	wantRefused(t, err, "refusing to write the report into "+filepath.Join(dir, OutDir), dir+" belongs to "+proctest.OtherUserName,
		"pass --out (RenderOptions.OutDir) a directory of your own")
	if _, err := os.Lstat(filepath.Join(dir, OutDir)); !os.IsNotExist(err) {
		t.Errorf("Write made %s (%v) in another user's run directory", filepath.Join(dir, OutDir), err)
	}
	// Nor into a report directory of the caller's they could replace.
	if err := os.Mkdir(filepath.Join(dir, OutDir), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Write(dir, RenderOptions{})
	wantRefused(t, err, dir+" belongs to "+proctest.OtherUserName)

	out := filepath.Join(t.TempDir(), "mine")
	w, err := Write(dir, RenderOptions{OutDir: out})
	if err != nil {
		t.Fatalf("--out a directory of the caller's: %v", err)
	}
	if _, err := os.Stat(w.Index); err != nil || w.Index != filepath.Join(out, IndexFile) {
		t.Errorf("the page %s: %v", w.Index, err)
	}
}
