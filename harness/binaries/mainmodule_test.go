package binaries

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestKubeAPIServerTestMain: the embedded main is kept out of kubeharness's
// own builds by its build constraint, and is a main package without it.
func TestKubeAPIServerTestMain(t *testing.T) {
	if !strings.HasPrefix(string(KubeAPIServerTest.main), "//go:build ignore\n\n") {
		t.Fatal("kubeapiservertest/main.go does not begin with the build constraint that keeps it out of kubeharness's builds")
	}
	src := mainSource(KubeAPIServerTest.main)
	if strings.Contains(string(src), "//go:build") {
		t.Error("mainSource left a build constraint")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name != "main" {
		t.Errorf("package %s, want main", f.Name.Name)
	}
}

// TestMainModule: the main module is the build module under a path naming
// the main's source, without its tools, with its replacements and go.sum.
func TestMainModule(t *testing.T) {
	base := t.TempDir()
	gomod := "module kubeharness.local/controlplane\n\ngo 1.26\n\nrequire k8s.io/kubernetes v1.37.1\n\nreplace k8s.io/api => k8s.io/api v0.37.1\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n"
	for name, data := range map[string]string{"go.mod": gomod, "go.sum": "k8s.io/api v0.37.1 h1:x\n"} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := &Builder{Store: t.TempDir()}
	dir, err := b.mainModule(KubeAPIServerTest, versions.MustParse("1.37.1"), base)
	if err != nil {
		t.Fatal(err)
	}
	f, err := readGoMod(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Module.Mod.Path != mainModulePath(KubeAPIServerTest) || !strings.HasPrefix(f.Module.Mod.Path, "kubeharness.local/kube-apiserver-test/") {
		t.Errorf("module %s, want %s", f.Module.Mod.Path, mainModulePath(KubeAPIServerTest))
	}
	if len(f.Tool) != 0 {
		t.Errorf("tools kept: %v", f.Tool)
	}
	if v, ok := requirement(f, "k8s.io/kubernetes"); !ok || v != "v1.37.1" {
		t.Errorf("k8s.io/kubernetes required at %q", v)
	}
	if len(f.Replace) != 1 || f.Replace[0].New.Version != "v0.37.1" {
		t.Errorf("replacements %v", f.Replace)
	}
	for _, name := range []string{"go.sum", "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	changed := KubeAPIServerTest
	changed.main = append([]byte("// changed\n"), changed.main...)
	if mainModulePath(changed) == mainModulePath(KubeAPIServerTest) {
		t.Error("another main source has the same module path: a binary built from the old one would count as up to date")
	}
}
