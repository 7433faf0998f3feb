package operatortest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// providerRoot is a repository root holding the committed versions.yaml.
func providerRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", versions.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, versions.LockfileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// fakeBinaries writes control-plane binaries that report Kubernetes
// version into dir; names lists which.
func fakeBinaries(t *testing.T, dir, version string, names ...string) {
	t.Helper()
	out := map[string]string{
		"etcd":                    "etcd Version: 3.7.3",
		"kube-apiserver":          "Kubernetes v" + version,
		"kube-controller-manager": "Kubernetes v" + version,
	}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out[name]+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEnvtestProviderResolvesItsVersion: the provider resolves $K8S_VERSION
// with the one resolver and checks the binaries before starting anything.
// GOPROXY=off keeps the Go module proxy out of it.
func TestEnvtestProviderResolvesItsVersion(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	cases := []struct {
		name    string
		version string
		assets  func(t *testing.T) string
		wantErr []string
	}{
		{
			name: "a minor names the patch to build", version: "1.36",
			wantErr: []string{"K8S_VERSION=1.36: the binaries of Kubernetes 1.36.4 are not built yet", "run `kubeharness bins use 1.36.4 --with-controller-manager --bin-dir "},
		},
		{
			name: "a pre-release is refused", version: "v1.37.1-rc.0",
			wantErr: []string{"K8S_VERSION=v1.37.1-rc.0 is a pre-release"},
		},
		{
			name: "not a version", version: "latest",
			wantErr: []string{"K8S_VERSION=latest is not a Kubernetes version", "Versions that can be built: 1.37.1"},
		},
		{
			name: "KUBEBUILDER_ASSETS of another version", version: "1.37",
			assets: func(t *testing.T) string {
				dir := t.TempDir()
				fakeBinaries(t, dir, "1.36.4", "etcd", "kube-apiserver", "kube-controller-manager")
				return dir
			},
			wantErr: []string{"K8S_VERSION=1.37 asks for Kubernetes 1.37, but $KUBEBUILDER_ASSETS=", "holds 1.36.4"},
		},
		{
			name: "KUBEBUILDER_ASSETS without kube-controller-manager",
			assets: func(t *testing.T) string {
				dir := t.TempDir()
				fakeBinaries(t, dir, "1.37.1", "etcd", "kube-apiserver")
				return dir
			},
			wantErr: []string{"kube-controller-manager not found", "--with-controller-manager"},
		},
		{
			name: "KUBEBUILDER_ASSETS of empty files",
			assets: func(t *testing.T) string {
				dir := t.TempDir()
				for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
					if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				return dir
			},
			wantErr: []string{"etcd is an empty file"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assets := ""
			if tc.assets != nil {
				assets = tc.assets(t)
			}
			t.Setenv(binaries.AssetsEnv, assets)
			t.Setenv(ProviderEnv, "envtest")
			t.Setenv(versions.EnvVar, tc.version)
			// $K8S_VERSION is read once, when the provider is made; a request
			// that is no version fails there.
			p, err := NewProvider(providerRoot(t), t.TempDir())
			if err == nil {
				defer func() { _ = p.Stop(context.Background()) }()
				_, err = p.Start(context.Background())
			}
			if err == nil {
				t.Fatal("Start succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestNewProviderReadsTheVersion(t *testing.T) {
	t.Setenv(ProviderEnv, "")
	t.Setenv(versions.EnvVar, "1.36")
	p, err := NewProvider("/repo", "/artifacts")
	if err != nil {
		t.Fatal(err)
	}
	if ep, ok := p.(*EnvtestProvider); !ok || ep.Version != versions.MustParseSelector("1.36", versions.SourceEnv) {
		t.Fatalf("NewProvider = %#v, want the envtest provider asked for 1.36", p)
	}
}
