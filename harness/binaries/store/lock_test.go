//go:build unix

package store

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockDirMakesBuildersTakeTurns: a second builder of a binary waits,
// saying so, until the first is done; a builder of another binary does not.
func TestLockDirMakesBuildersTakeTurns(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	unlock, err := Lock(ctx, dir, "etcd", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	got := make(chan error, 1)
	var second func()
	go func() {
		var err error
		second, err = Lock(ctx, dir, "etcd", w)
		got <- err
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "etcd: waiting for another build of it into "+dir) {
		t.Errorf("the waiting builder says %q", line)
	}
	select {
	case err := <-got:
		t.Fatalf("the second builder got the lock while the first held it (err %v)", err)
	default:
	}
	other, err := Lock(ctx, dir, "kube-apiserver", io.Discard)
	if err != nil {
		t.Fatalf("another binary of the same directory waits too: %v", err)
	}
	other()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("the second builder: %v", err)
	}
	second()
}

// TestLockDirGivesUpWithItsContext: a builder that waits no longer once its
// context ends.
func TestLockDirGivesUpWithItsContext(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(context.Background(), dir, "etcd", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	got := make(chan error, 1)
	go func() {
		_, err := Lock(ctx, dir, "etcd", w)
		got <- err
	}()
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait returned %v, want context.Canceled", err)
	}
}

// TestCheckSaysEverything: every problem of a store is said at once, with
// one command that fixes those a chmod fixes.
func TestCheckSaysEverything(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	dir := filepath.Join(s.Dir, "k8s", "1.37.1-linux-amd64")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.Dir, dir, filepath.Join(dir, "kubectl")} {
		if err := os.Chmod(p, 0o757); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Check(dir, "etcd", "kubectl")
	if err == nil || !strings.Contains(err.Error(), "run `chmod go-w "+s.Dir+" "+dir+" "+filepath.Join(dir, "kubectl")+"`") || !strings.Contains(err.Error(), "another --bin-dir") {
		t.Errorf("Check = %v", err)
	}
	if err := s.Check(filepath.Join(s.Dir, "k8s", "missing")); err == nil {
		t.Error("a store directory that does not exist checks out")
	}
}
