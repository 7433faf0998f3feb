package component

import (
	"context"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// writeBinary writes an executable script that prints output, as a
// control-plane binary does for its version flag.
func writeBinary(t *testing.T, dir, name, output string) {
	t.Helper()
	script := "#!/bin/sh\nprintf '%s\\n' '" + output + "'\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeControlPlane writes etcd, kube-apiserver and kube-controller-manager
// reporting Kubernetes version into dir.
func fakeControlPlane(t *testing.T, dir, version string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeBinary(t, dir, "etcd", "etcd Version: 3.7.3\nGit SHA: v3.7.3")
	writeBinary(t, dir, "kube-apiserver", "Kubernetes v"+version)
	writeBinary(t, dir, "kube-controller-manager", "Kubernetes v"+version)
}

var withKCM = []Component{Etcd, KubeAPIServer, KubeControllerManager}

func TestCheckBinaries(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		want    string
		wantErr []string
	}{
		{name: "working binaries", setup: func(t *testing.T, dir string) { fakeControlPlane(t, dir, "1.37.1") }, want: "1.37.1"},
		{
			name: "empty files",
			setup: func(t *testing.T, dir string) {
				for _, c := range withKCM {
					if err := os.WriteFile(filepath.Join(dir, c.Name), nil, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			},
			wantErr: []string{"etcd is an empty file", "kube-apiserver is an empty file", "kube-controller-manager is an empty file"},
		},
		{
			name: "kube-controller-manager missing",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				_ = os.Remove(filepath.Join(dir, "kube-controller-manager"))
			},
			wantErr: []string{"kube-controller-manager is missing"},
		},
		{
			name: "not executable",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				if err := os.Chmod(filepath.Join(dir, "etcd"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: []string{"etcd is not executable"},
		},
		{
			name: "a directory",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				_ = os.Remove(filepath.Join(dir, "etcd"))
				if err := os.Mkdir(filepath.Join(dir, "etcd"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: []string{"etcd is a directory"},
		},
		{
			name: "no version",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				writeBinary(t, dir, "kube-apiserver", "hello")
			},
			wantErr: []string{"`kube-apiserver --version` reports no version", `"hello"`},
		},
		{
			name: "fails",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte("#!/bin/sh\necho boom\nexit 3\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: []string{"`etcd --version` fails (exit status 3): \"boom\""},
		},
		{
			name: "unstamped",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				writeBinary(t, dir, "kube-apiserver", "Kubernetes v0.0.0-master+$Format:%H$")
			},
			wantErr: []string{"reports v0.0.0-master", "unstamped"},
		},
		{
			name: "a pre-release",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.38.0-alpha.1")
			},
			wantErr: []string{"kube-apiserver reports Kubernetes 1.38.0-alpha.1, not a release"},
		},
		{
			name: "versions disagree",
			setup: func(t *testing.T, dir string) {
				fakeControlPlane(t, dir, "1.37.1")
				writeBinary(t, dir, "kube-controller-manager", "Kubernetes v1.36.4")
			},
			wantErr: []string{"kube-controller-manager reports Kubernetes 1.36.4 but kube-apiserver reports 1.37.1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			got, err := CheckBinaries(context.Background(), dir, withKCM...)
			if tc.wantErr == nil {
				if err != nil || got.String() != tc.want {
					t.Fatalf("CheckBinaries = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckBinaries = %q, want an error", got)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestBinaryVersionParses: the version flags' outputs of every component.
func TestBinaryVersionParses(t *testing.T) {
	dir := t.TempDir()
	for name, out := range map[string]string{
		"etcd":           "etcd Version: 3.7.3\nGit SHA: v3.7.3\nGo Version: go1.26.8",
		"kube-apiserver": "Kubernetes v1.37.1",
		"kubectl":        "Client Version: v1.37.1\nKustomize Version: v5.7.1",
		"kubeadm":        "v1.37.1",
	} {
		writeBinary(t, dir, name, out)
	}
	for _, c := range []Component{Etcd, KubeAPIServer, Kube("kubectl"), Kube("kubeadm")} {
		want := "1.37.1"
		if c.Name == "etcd" {
			want = "3.7.3"
		}
		if got, err := BinaryVersion(context.Background(), filepath.Join(dir, c.Name), c); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", c.Name, got, err, want)
		}
	}
}

func TestStampedCommit(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		out, commit string
		ok          bool
	}{
		"raw placeholder": {`version.Info{Major:"1", GitVersion:"v1.37.1", GitCommit:"$Format:%H$", GitTreeState:"clean"}`, "", false},
		"raw empty":       {`version.Info{Major:"1", GitVersion:"v1.37.1", GitCommit:"", GitTreeState:"clean"}`, "", true},
		"json hash":       {`{"clientVersion": {"gitVersion": "v1.37.1", "gitCommit": "0123abc"}}`, "0123abc", true},
		"nothing":         {`Kubernetes v1.37.1`, "", false},
	} {
		writeBinary(t, dir, "kube-apiserver", tc.out)
		commit, ok := StampedCommit(ctx, filepath.Join(dir, "kube-apiserver"), KubeAPIServer)
		if commit != tc.commit || ok != tc.ok {
			t.Errorf("%s: stampedCommit = %q, %v; want %q, %v", name, commit, ok, tc.commit, tc.ok)
		}
	}
	if _, ok := StampedCommit(ctx, "/nonexistent", Etcd); !ok {
		t.Error("etcd stamps no commit and needs no check")
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

// TestKubeAPIServerTestMain: the embedded main is kept out of kubeharness's
// own builds by its build constraint, and is a main package without it.
func TestKubeAPIServerTestMain(t *testing.T) {
	if !strings.HasPrefix(string(KubeAPIServerTest.Main()), "//go:build ignore\n\n") {
		t.Fatal("kubeapiservertest/main.go does not begin with the build constraint that keeps it out of kubeharness's builds")
	}
	src := KubeAPIServerTest.MainSource()
	if strings.Contains(string(src), "//go:build") {
		t.Error("MainSource left a build constraint")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name != "main" {
		t.Errorf("package %s, want main", f.Name.Name)
	}
}
