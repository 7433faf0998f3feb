package operatortest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
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

func TestNewProviderRunsTheControllersWhereAsked(t *testing.T) {
	root := providerRoot(t)
	for _, tc := range []struct {
		env      string
		binaries bool
		wantErr  bool
	}{
		{env: "", binaries: false},
		{env: "in-process", binaries: false},
		{env: "binaries", binaries: true},
		{env: "both", wantErr: true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(ProviderEnv, "envtest")
			t.Setenv(ControllersEnv, tc.env)
			p, err := NewProvider(root, t.TempDir())
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), ControllersEnv) {
					t.Fatalf("NewProvider with %s=%q: %v, want an error naming %s", ControllersEnv, tc.env, err, ControllersEnv)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.(*EnvtestProvider).Binaries; got != tc.binaries {
				t.Errorf("%s=%q: Binaries %v, want %v", ControllersEnv, tc.env, got, tc.binaries)
			}
		})
	}
}

func TestBinariesNeedTheBuiltBinaries(t *testing.T) {
	p := &EnvtestProvider{Root: t.TempDir(), Binaries: true}
	vm, _, err := VMControllerOptions()
	if err != nil {
		t.Fatal(err)
	}
	o := LocalOptions{VMController: &vm}
	_, err = p.asBinaries(&o, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "make manager vm-controller") {
		t.Fatalf("asBinaries without bin/manager: %v, want an error saying what builds it", err)
	}
}

func TestBinariesServeTheFakeDriverFromAPrivateDirectory(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"manager", "vm-controller"} {
		if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "bin", name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &EnvtestProvider{Root: root, Binaries: true}
	t.Cleanup(func() { _ = os.RemoveAll(p.private) })
	vm, _, err := VMControllerOptions()
	if err != nil {
		t.Fatal(err)
	}
	o := LocalOptions{VMController: &vm}
	fakeFile, err := p.asBinaries(&o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Runner.(ManagerProcess); !ok {
		t.Errorf("the manager's runner is %T, want ManagerProcess", o.Runner)
	}
	vmRunner, ok := o.VMRunner.(VMControllerProcess)
	if !ok {
		t.Fatalf("the VirtualMachine controller's runner is %T, want VMControllerProcess", o.VMRunner)
	}
	if o.VMController.NewDriver != nil {
		t.Error("NewDriver is still set: no flag carries it to the binary")
	}
	if filepath.Dir(fakeFile) != p.private || !slices.Contains(vmRunner.Env, vmfixture.FakeVMsFileEnv+"="+fakeFile) {
		t.Errorf("the fake driver's file %q (env %q), want it in %s and in the controller's environment", fakeFile, vmRunner.Env, p.private)
	}
	fi, err := os.Stat(p.private)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("the directory of the kubeconfigs and the fake driver's token has mode %v, want 0700", perm)
	}
}
