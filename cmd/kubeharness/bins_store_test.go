package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

// fakeStore writes working envtest binaries of version into a store and
// returns its bin-dir and the version's directory.
func fakeStore(t *testing.T, version string) (string, string) {
	t.Helper()
	// Whatever a test does wrong, it must never reach a real store: run
	// outside the repository (whose default store is its bin/) with
	// setup-envtest's default directory and HOME in temporary places.
	t.Chdir(t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	binDir := t.TempDir()
	dir := binaries.StoreDir(binDir, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{
		"etcd":           "etcd Version: 3.7.3",
		"kube-apiserver": "Kubernetes v" + version,
		"kubectl":        "Client Version: v" + version,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return binDir, dir
}

// TestBinsUseInstalledOnly: -i uses the store alone; -p env and -p path
// print what a shell and KUBEBUILDER_ASSETS want on stdout; an empty store
// fails and says what to do.
func TestBinsUseInstalledOnly(t *testing.T) {
	t.Setenv(binaries.VersionEnv, "")
	t.Setenv(binaries.AssetsEnv, "")
	binDir, dir := fakeStore(t, "1.37.1")
	ctx := context.Background()
	for mode, want := range map[string]string{
		"path":     dir + "\n",
		"env":      "export KUBEBUILDER_ASSETS='" + dir + "'\n",
		"overview": "Version: 1.37.1\nOS/Arch: " + runtime.GOOS + "/" + runtime.GOARCH + "\nPath: " + dir + "\n",
	} {
		var out strings.Builder
		if err := bins(ctx, []string{"use", "1.37", "-i", "-p", mode, "--bin-dir", binDir}, &out); err != nil || out.String() != want {
			t.Errorf("-p %s: %q, %v; want %q", mode, out.String(), err, want)
		}
	}
	var out strings.Builder
	err := withStderr(t, func() error {
		return bins(ctx, []string{"use", "1.37", "-i", "-p", "path", "--bin-dir", t.TempDir()}, &out)
	})
	if err == nil || !strings.Contains(err.Error(), "-i (installed only): no Kubernetes 1.37 for") || !strings.Contains(err.Error(), "drop -i") || out.Len() != 0 {
		t.Errorf("empty store: %v, stdout %q", err, out.String())
	}
	var usage *usageError
	if err := withStderr(t, func() error { return bins(ctx, []string{"use", "-p", "yaml", "--bin-dir", binDir}, &out) }); !errors.As(err, &usage) {
		t.Errorf("-p yaml: %v, want a usage error", err)
	}
}

func TestBinsListAndCleanup(t *testing.T) {
	binDir, dir := fakeStore(t, "1.37.1")
	ctx := context.Background()
	var out strings.Builder
	if err := bins(ctx, []string{"list", "-i", "--bin-dir", binDir}, &out); err != nil || !strings.Contains(out.String(), "(installed)  v1.37.1") {
		t.Errorf("list -i: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := withStderr(t, func() error { return bins(ctx, []string{"cleanup", "1.36", "--bin-dir", binDir}, &out) }); err != nil || out.Len() != 0 {
		t.Errorf("cleanup 1.36: %q, %v", out.String(), err)
	}
	if err := bins(ctx, []string{"cleanup", "--bin-dir", binDir}, &out); err != nil || !strings.Contains(out.String(), "removed v1.37.1") {
		t.Errorf("cleanup: %q, %v", out.String(), err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s (%v)", dir, err)
	}
}
