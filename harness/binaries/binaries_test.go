package binaries

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

func TestFindHonoursKubebuilderAssets(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(AssetsEnv, dir)
	v := versions.MustParse("1.37.1")
	if _, err := Find(t.TempDir(), v); err == nil || !strings.Contains(err.Error(), "(from "+AssetsEnv+")") {
		t.Fatalf("want an error naming $%s when its directory is empty, got %v", AssetsEnv, err)
	}
	// Empty files are not binaries.
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Find(t.TempDir(), v); err == nil || !strings.Contains(err.Error(), "etcd is an empty file") {
		t.Fatalf("want an error naming the empty etcd, got %v", err)
	}
	fakeControlPlane(t, dir, "1.37.1")
	got, err := Find(t.TempDir(), v)
	if err != nil || got != dir {
		t.Fatalf("Find = %q, %v; want %q", got, err, dir)
	}
}
