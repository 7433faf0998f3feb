//go:build unix

package binaries

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLockDirMakesBuildersTakeTurns: a second builder of a binary waits,
// saying so, until the first is done; a builder of another binary does not.
func TestLockDirMakesBuildersTakeTurns(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	unlock, err := lockDir(ctx, dir, "etcd", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	got := make(chan error, 1)
	var second func()
	go func() {
		var err error
		second, err = lockDir(ctx, dir, "etcd", w)
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
	other, err := lockDir(ctx, dir, "kube-apiserver", io.Discard)
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
	unlock, err := lockDir(context.Background(), dir, "etcd", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	got := make(chan error, 1)
	go func() {
		_, err := lockDir(ctx, dir, "etcd", w)
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
