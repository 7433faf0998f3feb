package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"

	"github.com/kubeharness/kubeharness/internal/testutil"
)

// testProxy serves k8s.io/kubernetes 1.36.0 up to 1.36.<newest>.
type testProxy struct{ newest int }

func (p testProxy) Lists(_ context.Context, v versions.Version) (bool, error) {
	return v.Major() == 1 && v.Minor() == 36 && v.Patch() <= p.newest, nil
}

func (p testProxy) Serves(context.Context, versions.Version) error { return nil }

// useProxy makes the commands ask p instead of the Go module proxy.
func useProxy(t *testing.T, p versions.Proxy) {
	t.Helper()
	old := moduleProxy
	moduleProxy = p
	t.Cleanup(func() { moduleProxy = old })
}

// fakeAssets writes etcd, kube-apiserver and kube-controller-manager that
// report Kubernetes version, and points KUBEBUILDER_ASSETS at them.
func fakeAssets(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	for name, out := range map[string]string{
		"etcd":                    "etcd Version: 3.7.3",
		"kube-apiserver":          "Kubernetes v" + version,
		"kube-controller-manager": "Kubernetes v" + version,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(binaries.AssetsEnv, dir)
	return dir
}

// TestBinsVersionArgument: the VERSION argument counts, flags may follow
// it, and anything more is a usage error.
func TestBinsVersionArgument(t *testing.T) {
	assets := fakeAssets(t, "1.37.1")
	t.Setenv(versions.EnvVar, "")
	useProxy(t, testProxy{newest: 4})
	cases := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
		usage   bool
	}{
		{name: "argument then flags", args: []string{"1.37", "--print-dir", "--with-controller-manager"}, wantOut: assets + "\n"},
		{name: "argument and flag agree", args: []string{"--version", "v1.37.1", "1.37.1", "--print-dir"}, wantOut: assets + "\n"},
		{name: "argument is checked", args: []string{"1.36", "--print-dir"}, wantErr: "VERSION argument 1.36 asks for Kubernetes 1.36, but $KUBEBUILDER_ASSETS=" + assets + " holds 1.37.1"},
		{name: "extra argument", args: []string{"1.37", "extra"}, wantErr: `unexpected arguments ["extra"]`, usage: true},
		{name: "argument is no version", args: []string{"1.037"}, wantErr: "VERSION argument 1.037 is not a Kubernetes version: write a patch"},
		{name: "no version lists those versions.yaml pins", args: []string{"1.037"}, wantErr: ". Versions that can be built: "},
		{name: "argument and flag disagree", args: []string{"--version", "1.36", "1.37"}, wantErr: "the VERSION argument 1.37 and --version 1.36 disagree", usage: true},
		{name: "unknown flag after the argument", args: []string{"1.37", "--bogus"}, wantErr: "unknown flag: --bogus", usage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := kubeharness(t, append([]string{"bins"}, tc.args...)...)
			if tc.wantErr == "" {
				if code != 0 || out != tc.wantOut {
					t.Fatalf("bins %q printed %q, exit status %d (%s); want %q", tc.args, out, code, errOut, tc.wantOut)
				}
				return
			}
			if !strings.HasPrefix(errOut, "kubeharness bins: ") || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("bins %q: error %q, want %q", tc.args, errOut, tc.wantErr)
			}
			if want := map[bool]int{true: 2, false: 1}[tc.usage]; code != want {
				t.Errorf("exit status %d, want %d", code, want)
			}
		})
	}
}

// TestLockfileVersionArgument: `lockfile --shell 1.36` resolves 1.36, not
// the default, also with the flag after the argument.
func TestLockfileVersionArgument(t *testing.T) {
	t.Setenv(versions.EnvVar, "1.36")
	// 1.36.4 is the newest 1.36 patch, and versions.yaml pins its etcd.
	useProxy(t, testProxy{newest: 4})
	for _, args := range [][]string{{"--shell", "1.36"}, {"1.36", "--shell"}, {"--shell"}, {"--shell", "--version", "1.36.x"}} {
		out, errOut, code := kubeharness(t, append([]string{"lockfile"}, args...)...)
		if code != 0 {
			t.Fatalf("lockfile %q: exit status %d: %s", args, code, errOut)
		}
		if !strings.Contains(out, "KUBE_VERSION='1.36.4'\n") {
			t.Errorf("lockfile %q printed\n%s\nwant KUBE_VERSION='1.36.4', the newest 1.36 patch the proxy serves", args, out)
		}
	}
	if _, errOut, code := kubeharness(t, "lockfile", "--shell", "1.36", "1.37"); code != 2 {
		t.Errorf("two versions: exit status %d (%s), want a usage error", code, errOut)
	}
}

// TestEnvUpAndBenchResolveMinors: a minor names the build of the patch it
// resolves to, and a missing build names that patch, so the advice does
// not send the user round in a circle.
func TestEnvUpAndBenchResolveMinors(t *testing.T) {
	t.Setenv(binaries.AssetsEnv, "")
	t.Setenv(versions.EnvVar, "1.36")
	// A patch newer than any built here.
	useProxy(t, testProxy{newest: 9})
	manager := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(manager, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"env up": {"env", "up", "--manager", manager, "--state-dir", t.TempDir()},
		"bench":  {"bench"},
	} {
		_, errOut, code := kubeharness(t, args...)
		want := "K8S_VERSION=1.36: the binaries of Kubernetes 1.36.9 are not built yet"
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "run `kubeharness bins use 1.36.9") {
			t.Errorf("%s: exit status %d, error %q; want 1, %q and the command that builds 1.36.9", name, code, errOut, want)
		}
	}
}

// kubeharness runs the kubeharness command line args in this process and
// returns what it printed on standard output and as its error, and its
// exit status; the commands' notes on os.Stderr are discarded.
func kubeharness(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	_ = testutil.WithoutStderr(t, func() error {
		code = run(context.Background(), args, &out, &errOut)
		return nil
	})
	return out.String(), errOut.String(), code
}
