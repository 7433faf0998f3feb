package binaries

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
func fakeControlPlane(t *testing.T, dir, version string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeBinary(t, dir, "etcd", "etcd Version: 3.7.3\nGit SHA: v3.7.3")
	writeBinary(t, dir, "kube-apiserver", "Kubernetes v"+version)
	writeBinary(t, dir, "kube-controller-manager", "Kubernetes v"+version)
	return dir
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
				if err != nil || got != tc.want {
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
	for _, c := range []Component{Etcd, KubeAPIServer, kubeComponent("kubectl"), kubeComponent("kubeadm")} {
		want := "1.37.1"
		if c.Name == "etcd" {
			want = "3.7.3"
		}
		if got, err := BinaryVersion(context.Background(), filepath.Join(dir, c.Name), c); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", c.Name, got, err, want)
		}
	}
}

func TestLocateKubebuilderAssets(t *testing.T) {
	assets := fakeControlPlane(t, t.TempDir(), "1.37.1")
	t.Setenv(AssetsEnv, assets)
	cases := []struct {
		name    string
		req     Request
		wantErr []string
	}{
		{name: "nothing asked: the assets win", req: Request{Source: VersionEnv}},
		{name: "their minor", req: Request{Value: "1.37", Source: VersionEnv}},
		{name: "their patch", req: Request{Value: "v1.37.1", Source: SourceFlag}},
		{
			name: "another minor", req: Request{Value: "1.36", Source: VersionEnv},
			wantErr: []string{"K8S_VERSION=1.36 asks for Kubernetes 1.36, but $KUBEBUILDER_ASSETS=" + assets + " holds 1.37.1", "unset K8S_VERSION to use these"},
		},
		{
			name: "another patch", req: Request{Value: "1.37.0", Source: SourceArg},
			wantErr: []string{"VERSION argument 1.37.0 asks for Kubernetes 1.37.0", "holds 1.37.1", "drop the VERSION argument"},
		},
		{name: "a pre-release", req: Request{Value: "1.37.1-rc.0", Source: VersionEnv}, wantErr: []string{"is a pre-release"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy := workplaceProxy()
			r := &Resolver{Lock: testLock(), Proxy: proxy}
			dir, version, err := r.Locate(context.Background(), t.TempDir(), tc.req, withKCM...)
			if len(proxy.calls) > 0 {
				t.Errorf("asked the proxy %v; with %s set nothing is resolved", proxy.calls, AssetsEnv)
			}
			if tc.wantErr == nil {
				if err != nil || dir != assets || version != "1.37.1" {
					t.Fatalf("Locate = %q, %q, %v; want %q, 1.37.1", dir, version, err, assets)
				}
				return
			}
			if err == nil {
				t.Fatalf("Locate = %q, %q; want an error", dir, version)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestLocateEmptyKubebuilderAssets: empty files are no binaries.
func TestLocateEmptyKubebuilderAssets(t *testing.T) {
	assets := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(assets, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(AssetsEnv, assets)
	r := &Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	_, _, err := r.Locate(context.Background(), t.TempDir(), Request{Source: VersionEnv}, DefaultComponents...)
	for _, want := range []string{"$KUBEBUILDER_ASSETS: in " + assets, "etcd is an empty file", "kube-apiserver is an empty file", "unset KUBEBUILDER_ASSETS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// The e2e suite needs kube-controller-manager too.
	fakeControlPlane(t, assets, "1.37.1")
	_ = os.Remove(filepath.Join(assets, "kube-controller-manager"))
	if _, _, err := r.Locate(context.Background(), t.TempDir(), Request{Source: VersionEnv}, withKCM...); err == nil || !strings.Contains(err.Error(), "kube-controller-manager is missing") {
		t.Errorf("error %v, want one naming the missing kube-controller-manager", err)
	}
}

// TestLocateMinor: a minor finds the build of the patch it resolves to (not
// bin/k8s/<minor>-...), and a missing build names the patch to build.
func TestLocateMinor(t *testing.T) {
	t.Setenv(AssetsEnv, "")
	root := t.TempDir()
	r := &Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	req := Request{Value: "1.37", Source: VersionEnv}
	_, _, err := r.Locate(context.Background(), root, req, withKCM...)
	if err == nil || !strings.Contains(err.Error(), "K8S_VERSION=1.37: the binaries of Kubernetes 1.37.1 are not built yet") ||
		!strings.Contains(err.Error(), "run `make envtest-bins K8S_VERSION=1.37.1`") {
		t.Fatalf("error %v, want one naming the patch to build", err)
	}
	want := fakeControlPlane(t, Dir(root, "1.37.1"), "1.37.1")
	dir, version, err := r.Locate(context.Background(), root, req, withKCM...)
	if err != nil || dir != want || version != "1.37.1" {
		t.Fatalf("Locate = %q, %q, %v; want %q, 1.37.1", dir, version, err, want)
	}
	// A build that reports another version is not taken for this one.
	writeBinary(t, want, "kube-apiserver", "Kubernetes v1.37.0")
	writeBinary(t, want, "kube-controller-manager", "Kubernetes v1.37.0")
	if _, _, err := r.Locate(context.Background(), root, req, withKCM...); err == nil || !strings.Contains(err.Error(), "holds Kubernetes 1.37.0, not 1.37.1") {
		t.Fatalf("error %v, want one saying the build holds another version", err)
	}
}
