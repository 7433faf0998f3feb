package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
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
	dir := binaries.StoreDir(binDir, versions.MustParse(version))
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
	t.Setenv(versions.EnvVar, "")
	t.Setenv(binaries.AssetsEnv, "")
	binDir, dir := fakeStore(t, "1.37.1")
	for mode, want := range map[string]string{
		"path":     dir + "\n",
		"env":      "export KUBEBUILDER_ASSETS='" + dir + "'\n",
		"overview": "Version: 1.37.1\nOS/Arch: " + runtime.GOOS + "/" + runtime.GOARCH + "\nPath: " + dir + "\n",
	} {
		if out, errOut, code := kubeharness(t, "bins", "use", "1.37", "-i", "-p", mode, "--bin-dir", binDir); code != 0 || out != want {
			t.Errorf("-p %s: %q, exit status %d (%s); want %q", mode, out, code, errOut, want)
		}
	}
	// pflag spells the same flags long, and in any order.
	if out, errOut, code := kubeharness(t, "bins", "use", "--bin-dir="+binDir, "--print=path", "1.37", "--installed-only"); code != 0 || out != dir+"\n" {
		t.Errorf("--print path --installed-only: %q, exit status %d (%s)", out, code, errOut)
	}
	out, errOut, code := kubeharness(t, "bins", "use", "1.37", "-i", "-p", "path", "--bin-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "-i (installed only): no Kubernetes 1.37 for") || !strings.Contains(errOut, "drop -i") || out != "" {
		t.Errorf("empty store: exit status %d, %q, stdout %q", code, errOut, out)
	}
	if _, errOut, code := kubeharness(t, "bins", "use", "-p", "yaml", "--bin-dir", binDir); code != 2 || !strings.Contains(errOut, `-p "yaml": want overview, env or path`) {
		t.Errorf("-p yaml: exit status %d (%s), want a usage error", code, errOut)
	}
}

func TestBinsListAndCleanup(t *testing.T) {
	binDir, dir := fakeStore(t, "1.37.1")
	if out, errOut, code := kubeharness(t, "bins", "list", "-i", "--bin-dir", binDir); code != 0 || !strings.Contains(out, "(installed)  v1.37.1") {
		t.Errorf("list -i: %q, exit status %d (%s)", out, code, errOut)
	}
	if out, errOut, code := kubeharness(t, "bins", "cleanup", "1.36", "--bin-dir", binDir); code != 0 || out != "" {
		t.Errorf("cleanup 1.36: %q, exit status %d (%s)", out, code, errOut)
	}
	if out, errOut, code := kubeharness(t, "bins", "cleanup", "--bin-dir", binDir); code != 0 || !strings.Contains(out, "removed v1.37.1") {
		t.Errorf("cleanup: %q, exit status %d (%s)", out, code, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s (%v)", dir, err)
	}
}
