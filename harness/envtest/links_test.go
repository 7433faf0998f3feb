package envtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/envtest"
)

// etcd and kube-apiserver named in different directories run from a
// directory of links that goes with the control plane: nothing of it is
// left after Stop.
func TestBinariesFromTwoDirectoriesLeaveNothingBehind(t *testing.T) {
	tunedOnly(t)
	assets(t)
	assetsDir := os.Getenv("KUBEBUILDER_ASSETS")
	etcdDir := t.TempDir()
	if err := os.Symlink(filepath.Join(assetsDir, "etcd"), filepath.Join(etcdDir, "etcd")); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("TEST_ASSET_ETCD", filepath.Join(etcdDir, "etcd"))
	t.Setenv("TEST_ASSET_KUBE_APISERVER", filepath.Join(assetsDir, "kube-apiserver"))

	links := func() []string {
		t.Helper()
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "kubeharness-envtest-bin-") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	env := &envtest.Environment{}
	if _, err := env.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := links(); len(got) != 1 {
		t.Errorf("while the plane runs: %v; want one directory of links", got)
	}
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := links(); len(got) != 0 {
		t.Errorf("after Stop: %v left in %s; want nothing", got, tmp)
	}
}
