package binaries

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
)

func TestLoadLockfile(t *testing.T) {
	const nodeImage = "nodeImage:\n  debianSuite: bookworm\n  debianMirror: http://deb.debian.org/debian\n  cniPlugins: v1.9.1\n"
	cases := []struct {
		name    string
		content string
		want    *Lockfile
		wantErr string
	}{
		{
			name:    "versions with and without v",
			content: "default: v1.37.1\nversions:\n  - kubernetes: 1.37.1\n    etcd: v3.7.3\n" + nodeImage,
			want: &Lockfile{Default: "1.37.1", Versions: []Entry{{Kubernetes: "1.37.1", Etcd: "3.7.3"}},
				NodeImage: NodeImage{DebianSuite: "bookworm", DebianMirror: "http://deb.debian.org/debian", CNIPlugins: "1.9.1"}},
		},
		{
			name:    "kind node image without digest",
			content: "default: 1.37.0\nversions:\n  - kubernetes: 1.37.0\n    etcd: 3.7.0\n    kindNode: kindest/node:v1.37.0\n" + nodeImage,
			wantErr: "not pinned by digest",
		},
		{name: "no node image inputs", content: "default: 1.37.1\nversions: []\n", wantErr: "nodeImage needs"},
		{name: "no default", content: "versions: []\n", wantErr: "no default version"},
		{name: "entry without etcd", content: "default: 1.37.1\nversions:\n  - kubernetes: 1.37.1\n", wantErr: "needs both kubernetes and etcd"},
		{name: "unknown field", content: "default: 1.37.1\nkind: 1\n", wantErr: "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, LockfileName), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadLockfile(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lockfile (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepositoryLockfile checks the committed versions.yaml: its default is
// listed, and the committed build modules pin exactly that version.
func TestRepositoryLockfile(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	l, err := LoadLockfile(root)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := l.Lookup(l.Default)
	if !ok {
		t.Fatalf("default %s is not among the versions", l.Default)
	}
	for _, c := range []struct{ dir, module, want string }{
		{KubeAPIServer.HackDir, KubeAPIServer.Module, e.Kubernetes},
		{Etcd.HackDir, Etcd.Module, e.Etcd},
	} {
		got, err := requiredVersion(filepath.Join(root, c.dir, "go.mod"), c.module)
		if err != nil {
			t.Fatal(err)
		}
		if TrimV(got) != c.want {
			t.Errorf("%s/go.mod pins %s %s, versions.yaml says %s", c.dir, c.module, got, c.want)
		}
	}
}

func TestKubeLDFlags(t *testing.T) {
	if got := kubeLDFlags("1.37.1", ""); !strings.Contains(got, "-X k8s.io/component-base/version.gitCommit= ") {
		t.Errorf("without a commit, ldflags %q must stamp gitCommit empty", got)
	}
	got := kubeLDFlags("1.37.1", "0123abc")
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

func TestResolveHonoursKubebuilderAssets(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(AssetsEnv, dir)
	if _, err := Resolve(t.TempDir(), "1.37.1"); err == nil || !strings.Contains(err.Error(), "$"+AssetsEnv) {
		t.Fatalf("want an error naming $%s when its directory is empty, got %v", AssetsEnv, err)
	}
	// Empty files are not binaries.
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Resolve(t.TempDir(), "1.37.1"); err == nil || !strings.Contains(err.Error(), "etcd is an empty file") {
		t.Fatalf("want an error naming the empty etcd, got %v", err)
	}
	fakeControlPlane(t, dir, "1.37.1")
	got, err := Resolve(t.TempDir(), "1.37.1")
	if err != nil || got != dir {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, dir)
	}
}

// TestCommittedModuleDeclaresEveryComponent: the committed build modules
// must list every component's main package as a tool, or `go mod tidy`
// there drops what the component needs.
func TestCommittedModuleDeclaresEveryComponent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	all := append([]Component{Etcd, KubeAPIServer, KubeControllerManager}, NodeComponents...)
	for _, c := range all {
		path := filepath.Join(root, c.HackDir, "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		mf, err := modfile.Parse(path, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tool := range mf.Tool {
			found = found || tool.Path == c.Package
		}
		if !found {
			t.Errorf("%s does not declare `tool %s` for %s", path, c.Package, c.Name)
		}
	}
}

// TestDeclaresTool: a generated build module that predates a component is
// recognised as lacking it, so it is generated again instead of failing on
// missing go.sum entries.
func TestDeclaresTool(t *testing.T) {
	gomod := filepath.Join(t.TempDir(), "go.mod")
	content := "module kubeharness.local/controlplane\n\ngo 1.26\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n"
	if err := os.WriteFile(gomod, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if !declaresTool(gomod, KubeAPIServer.Package) {
		t.Error("kube-apiserver is declared, but declaresTool says it is not")
	}
	if declaresTool(gomod, kubeComponent("kubelet").Package) {
		t.Error("kubelet is not declared, but declaresTool says it is")
	}
	if declaresTool(filepath.Join(t.TempDir(), "missing.mod"), KubeAPIServer.Package) {
		t.Error("a missing go.mod declares nothing")
	}
}
