package gobuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestGeneratedModuleReady: a generated build module that predates a
// component is recognized as lacking it, so it is generated again instead
// of failing on missing go.sum entries; so is one never tidied.
func TestGeneratedModuleReady(t *testing.T) {
	dir := t.TempDir()
	content := "module kubeharness.local/controlplane\n\ngo 1.26\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if generatedModuleReady(dir, component.KubeAPIServer.Package) {
		t.Error("a module without go.sum was never tidied, but generatedModuleReady says it is ready")
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !generatedModuleReady(dir, component.KubeAPIServer.Package) {
		t.Error("kube-apiserver is declared, but generatedModuleReady says the module cannot build it")
	}
	if generatedModuleReady(dir, component.Kube("kubelet").Package) {
		t.Error("kubelet is not declared, but generatedModuleReady says the module builds it")
	}
	if generatedModuleReady(t.TempDir(), component.KubeAPIServer.Package) {
		t.Error("a missing module builds nothing")
	}
}

// TestBuildModFile: a generated build module requires the module asked
// for, replaces Kubernetes' staging modules with their published versions,
// and declares the main packages it builds as tools.
func TestBuildModFile(t *testing.T) {
	tools := []string{component.KubeAPIServer.Package, component.Kube("kubelet").Package}
	data, err := buildModFile(component.KubeAPIServer.Module, versions.MustParse("1.37.1"), []string{"k8s.io/api", "k8s.io/client-go"}, tools)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	if v, ok := goproxy.Requirement(f, component.KubeAPIServer.Module); !ok || v != "v1.37.1" {
		t.Errorf("requires %s %q, %v; want v1.37.1", component.KubeAPIServer.Module, v, ok)
	}
	var replaces []string
	for _, r := range f.Replace {
		replaces = append(replaces, r.Old.Path+" => "+r.New.Path+" "+r.New.Version)
	}
	if diff := cmp.Diff([]string{"k8s.io/api => k8s.io/api v0.37.1", "k8s.io/client-go => k8s.io/client-go v0.37.1"}, replaces); diff != "" {
		t.Errorf("replaces (-want +got):\n%s", diff)
	}
	if len(f.Tool) != 2 || !declaresTool(f, tools[0]) || !declaresTool(f, tools[1]) {
		t.Errorf("declares %v as tools, want %v", f.Tool, tools)
	}
	etcd, err := buildModFile(component.Etcd.Module, versions.MustParse("3.7.3"), nil, []string{component.Etcd.Package})
	if err != nil {
		t.Fatal(err)
	}
	if f, err = modfile.Parse("go.mod", etcd, nil); err != nil || len(f.Replace) != 0 || !declaresTool(f, component.Etcd.Package) || len(f.Tool) != 1 {
		t.Errorf("etcd's build module:\n%s(%v)", etcd, err)
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
	s := &Source{Store: store.Store{Dir: t.TempDir()}}
	dir, err := s.mainModule(component.KubeAPIServerTest, versions.MustParse("1.37.1"), base)
	if err != nil {
		t.Fatal(err)
	}
	f, err := goproxy.ReadGoMod(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Module.Mod.Path != component.KubeAPIServerTest.MainModulePath() || !strings.HasPrefix(f.Module.Mod.Path, "kubeharness.local/kube-apiserver-test/") {
		t.Errorf("module %s, want %s", f.Module.Mod.Path, component.KubeAPIServerTest.MainModulePath())
	}
	if len(f.Tool) != 0 {
		t.Errorf("tools kept: %v", f.Tool)
	}
	if v, ok := goproxy.Requirement(f, "k8s.io/kubernetes"); !ok || v != "v1.37.1" {
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
}
