package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

func TestLocateKubebuilderAssets(t *testing.T) {
	assets := fakeControlPlane(t, t.TempDir(), "1.37.1")
	t.Setenv(AssetsEnv, assets)
	cases := []struct {
		name    string
		sel     versions.Selector
		wantErr []string
	}{
		{name: "nothing asked: the assets win", sel: versions.MustParseSelector("", versions.SourceEnv)},
		{name: "their minor", sel: versions.MustParseSelector("1.37", versions.SourceEnv)},
		{name: "their patch", sel: versions.MustParseSelector("v1.37.1", versions.SourceFlag)},
		{
			name: "another minor", sel: versions.MustParseSelector("1.36", versions.SourceEnv),
			wantErr: []string{"K8S_VERSION=1.36 asks for Kubernetes 1.36, but $KUBEBUILDER_ASSETS=" + assets + " holds 1.37.1", "unset K8S_VERSION to use these"},
		},
		{
			name: "another patch", sel: versions.MustParseSelector("1.37.0", versions.SourceArg),
			wantErr: []string{"VERSION argument 1.37.0 asks for Kubernetes 1.37.0", "holds 1.37.1", "drop the VERSION argument"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy := workplaceProxy()
			r := &versions.Resolver{Lock: testLock(), Proxy: proxy}
			dir, version, err := Locate(context.Background(), r, t.TempDir(), tc.sel, withKCM...)
			if len(proxy.calls) > 0 {
				t.Errorf("asked the proxy %v; with %s set nothing is resolved", proxy.calls, AssetsEnv)
			}
			if tc.wantErr == nil {
				if err != nil || dir != assets || version.String() != "1.37.1" {
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
	r := &versions.Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	_, _, err := Locate(context.Background(), r, t.TempDir(), versions.Selector{}, DefaultComponents...)
	for _, want := range []string{"$KUBEBUILDER_ASSETS=" + assets + ": in " + assets, "etcd is an empty file", "kube-apiserver is an empty file", "unset KUBEBUILDER_ASSETS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// The e2e suite needs kube-controller-manager too.
	fakeControlPlane(t, assets, "1.37.1")
	_ = os.Remove(filepath.Join(assets, "kube-controller-manager"))
	if _, _, err := Locate(context.Background(), r, t.TempDir(), versions.Selector{}, withKCM...); err == nil || !strings.Contains(err.Error(), "kube-controller-manager not found: "+filepath.Join(assets, "kube-controller-manager")+" does not exist (from KUBEBUILDER_ASSETS)") {
		t.Errorf("error %v, want one naming the missing kube-controller-manager", err)
	}
}

// TestLocateMinor: a minor finds the build of the patch it resolves to (not
// bin/k8s/<minor>-...), and a missing build names the patch to build.
func TestLocateMinor(t *testing.T) {
	t.Setenv(AssetsEnv, "")
	root := t.TempDir()
	r := &versions.Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	sel := versions.MustParseSelector("1.37", versions.SourceEnv)
	_, _, err := Locate(context.Background(), r, root, sel, withKCM...)
	if err == nil || !strings.Contains(err.Error(), "K8S_VERSION=1.37: the binaries of Kubernetes 1.37.1 are not built yet") ||
		!strings.Contains(err.Error(), "run `kubeharness bins use 1.37.1 --with-controller-manager --bin-dir "+filepath.Join(root, "bin")+"`") {
		t.Fatalf("error %v, want one naming the patch to build", err)
	}
	want := fakeControlPlane(t, Dir(root, versions.MustParse("1.37.1")), "1.37.1")
	dir, version, err := Locate(context.Background(), r, root, sel, withKCM...)
	if err != nil || dir != want || version.String() != "1.37.1" {
		t.Fatalf("Locate = %q, %q, %v; want %q, 1.37.1", dir, version, err, want)
	}
	// A build that reports another version is not taken for this one.
	writeBinary(t, want, "kube-apiserver", "Kubernetes v1.37.0")
	writeBinary(t, want, "kube-controller-manager", "Kubernetes v1.37.0")
	if _, _, err := Locate(context.Background(), r, root, sel, withKCM...); err == nil || !strings.Contains(err.Error(), "holds Kubernetes 1.37.0, not 1.37.1") {
		t.Fatalf("error %v, want one saying the build holds another version", err)
	}
	// Asked for nothing, the error names versions.yaml's default.
	if _, _, err := Locate(context.Background(), r, t.TempDir(), versions.Selector{}, withKCM...); err == nil || !strings.Contains(err.Error(), "versions.yaml default 1.37.1: the binaries of Kubernetes 1.37.1 are not built yet") {
		t.Fatalf("error %v, want one naming versions.yaml's default", err)
	}
}

// fakeProxy answers like the Go module proxy of this workplace: it lists
// k8s.io/kubernetes patches it may refuse to serve.
type fakeProxy struct {
	listed  []string
	refused map[string]error

	mu    sync.Mutex
	calls []string
}

func (p *fakeProxy) Lists(_ context.Context, v versions.Version) (bool, error) {
	p.record("lists " + v.String())
	return slices.Contains(p.listed, v.String()), nil
}

func (p *fakeProxy) Serves(_ context.Context, v versions.Version) error {
	p.record("serves " + v.String())
	if !slices.Contains(p.listed, v.String()) {
		return fmt.Errorf("k8s.io/kubernetes has no version v%s", v)
	}
	return p.refused[v.String()]
}

func (p *fakeProxy) record(call string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
}

// workplaceProxy lists 1.37.0 to 1.37.2 but refuses 1.37.2's zip.
func workplaceProxy() *fakeProxy {
	return &fakeProxy{
		listed:  []string{"1.36.4", "1.37.0", "1.37.1", "1.37.2"},
		refused: map[string]error{"1.37.2": errors.New("the Go module proxy lists k8s.io/kubernetes@v1.37.2 but refuses to serve it (403 Forbidden)")},
	}
}

// testLock is versions.yaml as committed, in the order it lists them.
func testLock() *versions.Lockfile {
	return &versions.Lockfile{Default: versions.MustParse("1.37.1"), Versions: []versions.Entry{
		{Kubernetes: versions.MustParse("1.37.1"), Etcd: versions.MustParse("3.7.3")},
		{Kubernetes: versions.MustParse("1.36.4"), Etcd: versions.MustParse("3.6.16")},
		{Kubernetes: versions.MustParse("1.35.4"), Etcd: versions.MustParse("3.6.16")},
		{Kubernetes: versions.MustParse("1.37.0"), Etcd: versions.MustParse("3.7.0")},
	}}
}
