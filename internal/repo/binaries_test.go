package repo

import (
	"path/filepath"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestRepositoryLockfile checks the committed versions.yaml: its default is
// listed and tested in every lane, and the committed build modules pin
// exactly that version.
func TestRepositoryLockfile(t *testing.T) {
	root := filepath.Join("..", "..")
	l, err := LoadLockfile(root)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := l.Lookup(l.Default)
	if !ok {
		t.Fatalf("default %s is not among the versions", l.Default)
	}
	if !l.InLane(l.Default, LaneEnvtest) || !l.InLane(l.Default, LaneKind) {
		t.Errorf("the default %s must be tested in every lane; its lanes are %v", l.Default, l.Lanes(l.Default))
	}
	mods := BuildModules(root)
	for module, want := range map[string]versions.Version{binaries.KubeAPIServer.Module: e.Kubernetes, binaries.Etcd.Module: e.Etcd} {
		dir := mods[module]
		if dir == "" {
			t.Fatalf("no build module of %s below %s", module, root)
		}
		f, err := goproxy.ReadGoMod(filepath.Join(dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := goproxy.Requirement(f, module)
		if !ok {
			t.Errorf("%s/go.mod does not require %s", dir, module)
		} else if v, err := versions.Parse(got); err != nil || v != want {
			t.Errorf("%s/go.mod pins %s %s, versions.yaml says %s", dir, module, got, want)
		}
	}
}

// TestCommittedModuleDeclaresEveryComponent: the committed build modules
// must list every component's main package as a tool, or `go mod tidy`
// there drops what the component needs.
func TestCommittedModuleDeclaresEveryComponent(t *testing.T) {
	mods := BuildModules(filepath.Join("..", ".."))
	for _, c := range append(component.Known(), NodeComponents...) {
		path := filepath.Join(mods[c.Module], "go.mod")
		f, err := goproxy.ReadGoMod(path)
		if err != nil {
			t.Fatal(err)
		}
		declared := false
		for _, tool := range f.Tool {
			declared = declared || tool.Path == c.Package
		}
		if !declared {
			t.Errorf("%s does not declare `tool %s` for %s", path, c.Package, c.Name)
		}
	}
}
