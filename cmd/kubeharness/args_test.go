package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

func TestParseArgs(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		positional []string
		printDir   bool
		version    string
		usage      bool
	}{
		{name: "flags only", args: []string{"--print-dir", "--version", "1.37"}, printDir: true, version: "1.37"},
		{name: "flag after the argument", args: []string{"1.37", "--print-dir"}, positional: []string{"1.37"}, printDir: true},
		{name: "flags around the argument", args: []string{"--version=1.37", "1.37", "--print-dir"}, positional: []string{"1.37"}, printDir: true, version: "1.37"},
		{name: "extra arguments kept in order", args: []string{"1.37", "extra", "--print-dir", "more"}, positional: []string{"1.37", "extra", "more"}, printDir: true},
		{name: "double dash ends the flags", args: []string{"--print-dir", "--", "--version"}, positional: []string{"--version"}, printDir: true},
		{name: "unknown flag after the argument", args: []string{"1.37", "--bogus"}, usage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("test", "test")
			fs.SetOutput(io.Discard)
			printDir := fs.Bool("print-dir", false, "")
			version := fs.String("version", "", "")
			got, err := parseArgs(fs, tc.args)
			if tc.usage {
				var u *usageError
				if !errors.As(err, &u) {
					t.Fatalf("error %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.positional) || *printDir != tc.printDir || *version != tc.version {
				t.Errorf("parseArgs(%q) = %q, print-dir %v, version %q; want %q, %v, %q", tc.args, got, *printDir, *version, tc.positional, tc.printDir, tc.version)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{&usageError{errors.New("unexpected arguments")}, 2},
		{errors.New("build failed"), 1},
	} {
		if got := exitCode(io.Discard, "test", tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// testProxy serves k8s.io/kubernetes 1.36.0 up to 1.36.<newest>.
type testProxy struct{ newest int }

func (p testProxy) Lists(_ context.Context, v string) (bool, error) {
	for i := range p.newest + 1 {
		if v == fmt.Sprintf("1.36.%d", i) {
			return true, nil
		}
	}
	return false, nil
}

func (p testProxy) Serves(context.Context, string) error { return nil }

// useProxy makes the commands ask p instead of the Go module proxy.
func useProxy(t *testing.T, p binaries.Proxy) {
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
	t.Setenv(binaries.VersionEnv, "")
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
		{name: "argument and flag disagree", args: []string{"--version", "1.36", "1.37"}, wantErr: "the VERSION argument 1.37 and --version 1.36 disagree", usage: true},
		{name: "unknown flag after the argument", args: []string{"1.37", "--bogus"}, wantErr: "flag provided but not defined: -bogus", usage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := withStderr(t, func() error { return bins(context.Background(), tc.args, &out) })
			if tc.wantErr == "" {
				if err != nil || out.String() != tc.wantOut {
					t.Fatalf("bins %q printed %q, %v; want %q", tc.args, out.String(), err, tc.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("bins %q: error %v, want %q", tc.args, err, tc.wantErr)
			}
			if want := map[bool]int{true: 2, false: 1}[tc.usage]; exitCode(io.Discard, "bins", err) != want {
				t.Errorf("exit status %d, want %d", exitCode(io.Discard, "bins", err), want)
			}
		})
	}
}

// TestLockfileVersionArgument: `lockfile --shell 1.36` resolves 1.36, not
// the default, also with the flag after the argument.
func TestLockfileVersionArgument(t *testing.T) {
	t.Setenv(binaries.VersionEnv, "1.36")
	// 1.36.4 is the newest 1.36 patch, and versions.yaml pins its etcd.
	useProxy(t, testProxy{newest: 4})
	for _, args := range [][]string{{"--shell", "1.36"}, {"1.36", "--shell"}, {"--shell"}, {"--shell", "--version", "1.36.x"}} {
		var out bytes.Buffer
		if err := withStderr(t, func() error { return lockfile(context.Background(), args, &out) }); err != nil {
			t.Fatalf("lockfile %q: %v", args, err)
		}
		if !strings.Contains(out.String(), "KUBE_VERSION='1.36.4'\n") {
			t.Errorf("lockfile %q printed\n%s\nwant KUBE_VERSION='1.36.4', the newest 1.36 patch the proxy serves", args, out.String())
		}
	}
	err := withStderr(t, func() error { return lockfile(context.Background(), []string{"--shell", "1.36", "1.37"}, io.Discard) })
	if exitCode(io.Discard, "lockfile", err) != 2 {
		t.Errorf("two versions: %v, want a usage error", err)
	}
}

// TestEnvUpAndBenchResolveMinors: a minor names the build of the patch it
// resolves to, and a missing build names that patch, so the advice does
// not send the user round in a circle.
func TestEnvUpAndBenchResolveMinors(t *testing.T) {
	t.Setenv(binaries.AssetsEnv, "")
	t.Setenv(binaries.VersionEnv, "1.36")
	// A patch newer than any built here.
	useProxy(t, testProxy{newest: 9})
	manager := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(manager, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"env up": func() error {
			return runEnv(context.Background(), []string{"up", "--manager", manager, "--state-dir", t.TempDir()})
		},
		"bench": func() error { return runBench(context.Background(), nil) },
	} {
		err := withStderr(t, run)
		want := "K8S_VERSION=1.36: Kubernetes 1.36.9 is not built yet"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "run `make envtest-bins K8S_VERSION=1.36.9`") {
			t.Errorf("%s: error %v, want %q and the command that builds 1.36.9", name, err, want)
		}
	}
}

// withStderr runs f with standard error discarded (commands print notes
// and usage there).
func withStderr(t *testing.T, f func() error) error {
	t.Helper()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	old := os.Stderr
	os.Stderr = devnull
	defer func() { os.Stderr = old }()
	return f()
}
