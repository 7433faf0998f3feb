package flush

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A binary built without -cover serves the same main: Start does nothing
// and is no error. (harness/coverage's tests run a binary built with it.)
func TestStartWithoutCover(t *testing.T) {
	if builtWithCover() {
		t.Skip("this test binary is built with -cover")
	}
	dir := t.TempDir()
	t.Setenv(EnvCoverDir, dir)
	stop, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("left %q", left)
	}
}

// A registration whose process is gone is passed over and removed; a
// request with nobody registered asks nobody.
func TestRequestPassesOverStaleRegistrations(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "flush-999999999.addr")
	if err := os.WriteFile(stale, []byte(filepath.Join(dir, "gone.sock")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Request(context.Background(), dir, t.TempDir())
	if n != 0 || err != nil {
		t.Fatalf("Request: %d, %v; want 0, nil", n, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale registration is still there (%v)", err)
	}
}
