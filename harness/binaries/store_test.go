package binaries

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// envtestStore writes a store with working envtest binaries for versions
// and returns its bin-dir.
func envtestStore(t *testing.T, vs ...string) string {
	t.Helper()
	binDir := t.TempDir()
	for _, v := range vs {
		dir := fakeControlPlane(t, StoreDir(binDir, versions.MustParse(v)), v)
		writeBinary(t, dir, "kubectl", "Client Version: v"+v)
	}
	return binDir
}

func TestStoreLayout(t *testing.T) {
	v := versions.MustParse("v1.37.1")
	if got, want := StoreDir("/s", v), filepath.Join("/s", "k8s", "1.37.1-"+runtime.GOOS+"-"+runtime.GOARCH); got != want {
		t.Errorf("StoreDir = %s, want %s", got, want)
	}
	if got, want := Dir("/repo", v), StoreDir("/repo/bin", v); got != want {
		t.Errorf("Dir = %s, want the repository store's %s", got, want)
	}
}

func TestListAndFindInstalled(t *testing.T) {
	binDir := envtestStore(t, "1.36.4", "1.37.1", "1.37.0")
	// Neither a version directory nor one for this platform.
	for _, d := range []string{".src", "9.9.9-plan9-mips"} {
		if err := os.MkdirAll(filepath.Join(binDir, "k8s", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ListInstalled(binDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range all {
		got = append(got, in.Version.String()+"-"+in.OS)
	}
	if want := "9.9.9-plan9 1.37.1-" + runtime.GOOS + " 1.37.0-" + runtime.GOOS + " 1.36.4-" + runtime.GOOS; strings.Join(got, " ") != want {
		t.Errorf("ListInstalled = %v, want %s", got, want)
	}
	ctx := context.Background()
	for value, want := range map[string]string{"": "1.37.1", "1.37": "1.37.1", "v1.37.0": "1.37.0", "1.36.x": "1.36.4"} {
		in, err := FindInstalled(ctx, binDir, versions.MustParseSelector(value, versions.SourceArg), EnvtestComponents...)
		if err != nil || in.Version.String() != want {
			t.Errorf("FindInstalled(%q) = %s, %v; want %s", value, in.Version, err, want)
		}
	}
	if _, err := FindInstalled(ctx, binDir, versions.MustParseSelector("1.35", versions.SourceArg), EnvtestComponents...); err == nil || !strings.Contains(err.Error(), "no Kubernetes 1.35 for") {
		t.Errorf("FindInstalled(1.35): %v", err)
	}
	// A version whose binaries do not work is passed over, and said.
	if err := os.Remove(filepath.Join(StoreDir(binDir, versions.MustParse("1.37.1")), "kubectl")); err != nil {
		t.Fatal(err)
	}
	if in, err := FindInstalled(ctx, binDir, versions.MustParseSelector("1.37", versions.SourceArg), EnvtestComponents...); err != nil || in.Version.String() != "1.37.0" {
		t.Errorf("with 1.37.1's kubectl missing: %s, %v; want 1.37.0", in.Version, err)
	}
	if _, err := FindInstalled(ctx, binDir, versions.MustParseSelector("1.37.1", versions.SourceArg), EnvtestComponents...); err == nil || !strings.Contains(err.Error(), "kubectl is missing") {
		t.Errorf("FindInstalled(1.37.1) without kubectl: %v", err)
	}
	if _, err := FindInstalled(ctx, t.TempDir(), versions.Selector{}, EnvtestComponents...); err == nil || !strings.Contains(err.Error(), "no Kubernetes version for") {
		t.Errorf("empty store: %v", err)
	}
}

// TestBuildReusesAnotherStore: binaries of the same version, stamped, are
// hard-linked from the Reuse store instead of being built; etcd is kept as
// it is when no versions.yaml pins one.
func TestBuildReusesAnotherStore(t *testing.T) {
	repo := t.TempDir()
	v := versions.MustParse("1.37.1")
	src := StoreDir(repo, v)
	fakeControlPlane(t, src, "1.37.1")
	writeBinary(t, src, "kube-apiserver", "Kubernetes v1.37.1\nGitCommit:\"\"")
	writeBinary(t, src, "kubectl", "Client Version: v1.37.1\n\"gitCommit\": \"\"")
	t.Setenv("PATH", "") // no go command: nothing may be built
	var out strings.Builder
	store := t.TempDir()
	b := &Store{Dir: store, Reuse: repo, Out: &out}
	dir, err := b.Provide(context.Background(), v, EnvtestComponents...)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out.String())
	}
	if dir != StoreDir(store, v) {
		t.Errorf("Build = %s", dir)
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		a, errA := os.Stat(filepath.Join(src, name))
		b, errB := os.Stat(filepath.Join(dir, name))
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			t.Errorf("%s is not a hard link of the other store's (%v, %v)", name, errA, errB)
		}
	}
	if !strings.Contains(out.String(), "reused") {
		t.Errorf("Build said nothing of reuse:\n%s", out.String())
	}
	out.Reset()
	if _, err := b.Provide(context.Background(), v, EnvtestComponents...); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "etcd 3.7.3: kept") || !strings.Contains(out.String(), "kubectl 1.37.1: up to date") {
		t.Errorf("second Build:\n%s", out.String())
	}
}

func TestResolverWithoutLockfile(t *testing.T) {
	r, err := NewResolver("", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Proxy = workplaceProxy()
	if _, err := r.Resolve(context.Background(), versions.MustParseSelector("", versions.SourceEnv)); err == nil || !strings.Contains(err.Error(), "name one") {
		t.Errorf("no version asked for: %v", err)
	}
	if got, err := r.Resolve(context.Background(), versions.MustParseSelector("1.37", versions.SourceArg)); err != nil || got.IsZero() {
		t.Errorf("1.37 without versions.yaml: %q, %v", got, err)
	}
}
