package binaries

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestRepositoryLockfile checks the committed versions.yaml: its default is
// listed, and the committed build modules pin exactly that version.
func TestRepositoryLockfile(t *testing.T) {
	root := filepath.Join("..", "..")
	l, err := versions.LoadLockfile(root)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := l.Lookup(l.Default)
	if !ok {
		t.Fatalf("default %s is not among the versions", l.Default)
	}
	if !e.InLane(versions.LaneEnvtest) || !e.InLane(versions.LaneKind) {
		t.Errorf("the default %s must be tested in every lane; its lanes are %v", l.Default, e.Lanes)
	}
	for _, c := range []struct {
		dir, module string
		want        versions.Version
	}{
		{KubeAPIServer.HackDir, KubeAPIServer.Module, e.Kubernetes},
		{Etcd.HackDir, Etcd.Module, e.Etcd},
	} {
		f, err := readGoMod(filepath.Join(root, c.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := requirement(f, c.module)
		if !ok {
			t.Errorf("%s/go.mod does not require %s", c.dir, c.module)
		} else if v, err := versions.Parse(got); err != nil || v != c.want {
			t.Errorf("%s/go.mod pins %s %s, versions.yaml says %s", c.dir, c.module, got, c.want)
		}
	}
}

func TestKubeLDFlags(t *testing.T) {
	if got := kubeLDFlags(versions.MustParse("1.37.1"), ""); !strings.Contains(got, "-X k8s.io/component-base/version.gitCommit= ") {
		t.Errorf("without a commit, ldflags %q must stamp gitCommit empty", got)
	}
	got := kubeLDFlags(versions.MustParse("1.37.1"), "0123abc")
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitCommit=0123abc",
		"-X k8s.io/client-go/pkg/version.gitCommit=0123abc",
		"-X k8s.io/component-base/version.gitVersion=v1.37.1",
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=37",
		"-X k8s.io/client-go/pkg/version.gitVersion=v1.37.1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ldflags %q lack %q", got, want)
		}
	}
}

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

// TestCommittedModuleDeclaresEveryComponent: the committed build modules
// must list every component's main package as a tool, or `go mod tidy`
// there drops what the component needs.
func TestCommittedModuleDeclaresEveryComponent(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, c := range allComponents() {
		path := filepath.Join(root, c.HackDir, "go.mod")
		f, err := readGoMod(path)
		if err != nil {
			t.Fatal(err)
		}
		if !declaresTool(f, c.Package) {
			t.Errorf("%s does not declare `tool %s` for %s", path, c.Package, c.Name)
		}
	}
}

// TestGeneratedModuleReady: a generated build module that predates a
// component is recognized as lacking it, so it is generated again instead
// of failing on missing go.sum entries; so is one never tidied.
func TestGeneratedModuleReady(t *testing.T) {
	dir := t.TempDir()
	content := "module kubeharness.local/controlplane\n\ngo 1.26\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if generatedModuleReady(dir, KubeAPIServer.Package) {
		t.Error("a module without go.sum was never tidied, but generatedModuleReady says it is ready")
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !generatedModuleReady(dir, KubeAPIServer.Package) {
		t.Error("kube-apiserver is declared, but generatedModuleReady says the module cannot build it")
	}
	if generatedModuleReady(dir, kubeComponent("kubelet").Package) {
		t.Error("kubelet is not declared, but generatedModuleReady says the module builds it")
	}
	if generatedModuleReady(t.TempDir(), KubeAPIServer.Package) {
		t.Error("a missing module builds nothing")
	}
}

// TestBuildModFile: a generated build module requires the module asked
// for, replaces Kubernetes' staging modules with their published versions,
// and declares every component of the module as a tool.
func TestBuildModFile(t *testing.T) {
	data, err := buildModFile(KubeAPIServer.Module, versions.MustParse("1.37.1"), []string{"k8s.io/api", "k8s.io/client-go"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	if v, ok := requirement(f, KubeAPIServer.Module); !ok || v != "v1.37.1" {
		t.Errorf("requires %s %q, %v; want v1.37.1", KubeAPIServer.Module, v, ok)
	}
	var replaces []string
	for _, r := range f.Replace {
		replaces = append(replaces, r.Old.Path+" => "+r.New.Path+" "+r.New.Version)
	}
	if diff := cmp.Diff([]string{"k8s.io/api => k8s.io/api v0.37.1", "k8s.io/client-go => k8s.io/client-go v0.37.1"}, replaces); diff != "" {
		t.Errorf("replaces (-want +got):\n%s", diff)
	}
	for _, c := range allComponents() {
		if declared := declaresTool(f, c.Package); declared != (c.Module == KubeAPIServer.Module) {
			t.Errorf("declares %s as a tool: %v", c.Package, declared)
		}
	}
	etcd, err := buildModFile(Etcd.Module, versions.MustParse("3.7.3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, err = modfile.Parse("go.mod", etcd, nil); err != nil || len(f.Replace) != 0 || !declaresTool(f, Etcd.Package) || len(f.Tool) != 1 {
		t.Errorf("etcd's build module:\n%s(%v)", etcd, err)
	}
}

// TestParseKubeGoMod: k8s.io/kubernetes's go.mod yields the etcd it
// requires and its staging modules; one that only the go command's lax
// parsing of dependencies accepts still yields its etcd.
func TestParseKubeGoMod(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		path := filepath.Join(dir, "go.mod")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const gomod = "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.5\n\tk8s.io/client-go v0.0.0\n\tk8s.io/api v0.0.0\n)\n\nreplace (\n\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n\tk8s.io/api => ./staging/src/k8s.io/api\n\texample.com/other => example.com/fork v1.0.0\n)\n"
	v := versions.MustParse("1.37.1")
	m, err := parseKubeGoMod(write(gomod), v)
	if err != nil {
		t.Fatal(err)
	}
	staging, err := m.stagingModules()
	if m.etcd != "v3.6.5" || err != nil || !slices.Equal(staging, []string{"k8s.io/api", "k8s.io/client-go"}) {
		t.Errorf("parseKubeGoMod = etcd %q, staging %q, %v", m.etcd, staging, err)
	}
	m, err = parseKubeGoMod(write(gomod+"\nfuturedirective x\n"), v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.stagingModules(); m.etcd != "v3.6.5" || err == nil {
		t.Errorf("with an unknown directive: etcd %q, staging error %v; want v3.6.5 and an error", m.etcd, err)
	}
	if _, err := parseKubeGoMod(filepath.Join(dir, "missing"), v); err == nil || !strings.Contains(err.Error(), "reading go.mod of Kubernetes 1.37.1") {
		t.Errorf("missing go.mod: %v", err)
	}
}

// TestUnreachable: a version the proxy refuses is not listed; a
// proxy that cannot be asked is an error, not an absent version.
func TestUnreachable(t *testing.T) {
	for msg, want := range map[string]bool{
		"go: k8s.io/kubernetes@v9.99.0: reading https://proxy.golang.org/k8s.io/kubernetes/@v/v9.99.0.info: 403 Forbidden": false,
		"go: k8s.io/kubernetes@v1.37.9: invalid version: unknown revision v1.37.9":                                         false,
		"go: module lookup disabled by GOPROXY=off":                                                                        true,
		"dial tcp: lookup proxy.golang.org: no such host":                                                                  true,
	} {
		if got := unreachable(msg); got != want {
			t.Errorf("unreachable(%q) = %v, want %v", msg, got, want)
		}
	}
}
