//go:build unix

package gobuild

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestBuiltBinaryIsPrivate: go build writes its binary 0777 less the
// umask, writable by its group under a umask of 002; install makes it
// writable by its owner only, so that the store does not refuse what it
// built the next time.
func TestBuiltBinaryIsPrivate(t *testing.T) {
	s := store.Store{Dir: t.TempDir()}
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	v := versions.MustParse("1.37.1")
	dir := s.VersionDir(v)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kube-apiserver")
	// As go build -o writes it.
	f, err := os.OpenFile(bin+".tmp", os.O_CREATE|os.O_WRONLY, 0o777)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("#!/bin/sh\necho 'Kubernetes v1.37.1'\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := install(context.Background(), io.Discard, component.KubeAPIServer, v, bin+".tmp", bin, time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the binary built is %v (%v), want mode 0755", fi.Mode(), err)
	}
	if err := s.Check(dir, store.Files(dir)...); err != nil {
		t.Errorf("the store refuses what it built: %v", err)
	}
}
