package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// scriptBinaries makes a directory of etcd and kube-apiserver, each a
// script that creates the returned marker when it runs.
func scriptBinaries(t *testing.T) (dir, marker string) {
	t.Helper()
	base := t.TempDir()
	dir, marker = filepath.Join(base, "bin"), filepath.Join(base, "ran")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := "#!/bin/sh\ntouch '" + marker + "'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, marker
}

// TestStockStartRunsTheCheckedDirectory: the stock start runs the
// binaries of the directory it was given, which it checked, even where
// TEST_ASSET_ETCD or KUBEBUILDER_ASSETS would name others to
// controller-runtime.
func TestStockStartRunsTheCheckedDirectory(t *testing.T) {
	dir, marker := scriptBinaries(t)
	other, otherMarker := scriptBinaries(t)
	t.Setenv("KUBEBUILDER_ASSETS", other)
	t.Setenv("TEST_ASSET_ETCD", filepath.Join(other, "etcd"))
	t.Setenv("TEST_ASSET_KUBE_APISERVER", filepath.Join(other, "kube-apiserver"))
	if env, err := startStock(dir); err == nil {
		_ = env.Stop()
		t.Fatal("scripts started a control plane")
	}
	ran := func(marker string) bool { _, err := os.Stat(marker); return err == nil }
	if !ran(marker) || ran(otherMarker) {
		t.Errorf("the directory's binaries ran: %t; those the environment names: %t; want true, false", ran(marker), ran(otherMarker))
	}
}

// TestStockStartRefusesADirectoryOthersCanChange: the stock start checks
// the directory before controller-runtime runs anything of it.
func TestStockStartRefusesADirectoryOthersCanChange(t *testing.T) {
	dir, marker := scriptBinaries(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if env, err := startStock(dir); err == nil {
		_ = env.Stop()
		t.Fatal("a directory anyone can write was taken")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a binary of the refused directory ran")
	}
}
