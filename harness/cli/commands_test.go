package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runNew runs New's command line args in this process and returns what it
// printed on standard output and as its error, and its exit status.
func runNew(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), New(Options{}), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestNewAnswersHelpForAnyProject: every command of the installable
// kubeharness answers --help with exit status 0, and no help names what
// only the kubeharness repository has (its Makefile, its bin/kubeharness),
// for the command serves any project.
func TestNewAnswersHelpForAnyProject(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(New(Options{}), []string{})
	names := map[string]bool{}
	for _, p := range paths {
		names[strings.Join(p, " ")] = true
	}
	for _, w := range []string{"bins use", "bins list", "bins cleanup", "shard", "affected", "report", "report merge", "version", "completion"} {
		if !names[w] {
			t.Errorf("no command %q in the tree", w)
		}
	}
	repoOnly := regexp.MustCompile(`\bmake (e2e|kind|bench|verify|lint)|bin/kubeharness|hack/|versions\.yaml.s default\b`)
	for _, path := range paths {
		name := strings.Join(append([]string{"kubeharness"}, path...), " ")
		out, errOut, code := runNew(t, append(path, "--help")...)
		if code != ExitOK || errOut != "" || !strings.Contains(out, "Usage:\n  "+name) {
			t.Errorf("%s --help: exit status %d, stderr %q, stdout %q", name, code, errOut, out)
		}
		if m := repoOnly.FindString(out); m != "" {
			t.Errorf("%s --help names %q, which only the kubeharness repository has:\n%s", name, m, out)
		}
	}
	out, _, _ := runNew(t, "--help")
	if !strings.Contains(out, "go install "+Install+"@VERSION") || !strings.Contains(out, "go get -tool "+Install+"@VERSION") {
		t.Errorf("kubeharness --help does not say how to install it:\n%s", out)
	}
	if _, errOut, code := runNew(t, "bins"); code != ExitUsage || !strings.Contains(errOut, "missing command: name one of cleanup, list, use") {
		t.Errorf("bins without a command: exit status %d, %q; want a usage error naming use, list and cleanup", code, errOut)
	}
	if _, errOut, code := runNew(t, "bins", "1.37"); code != ExitUsage || !strings.Contains(errOut, `unknown command "1.37" for "kubeharness bins"`) {
		t.Errorf("bins 1.37: exit status %d, %q; want a usage error (bins VERSION is the repository's command)", code, errOut)
	}
}

// TestBinsOutsideAnyProject: outside a project with a versions.yaml, bins
// use -i, list -i and cleanup work on a store named by --bin-dir, as
// setup-envtest's commands do.
func TestBinsOutsideAnyProject(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the store provides nothing on Windows (binaries.ErrNeedsUnix), and the fake binaries are shell scripts")
	}
	t.Chdir(t.TempDir())
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("K8S_VERSION", "")
	store := t.TempDir()
	dir := filepath.Join(store, "k8s", "1.36.2-"+runtime.GOOS+"-"+runtime.GOARCH)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{
		"etcd":           "etcd Version: 3.6.5",
		"kube-apiserver": "Kubernetes v1.36.2",
		"kubectl":        "Client Version: v1.36.2",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, errOut, code := runNew(t, "bins", "list", "-i", "--bin-dir", store); code != ExitOK || !strings.Contains(out, "(installed)  v1.36.2") {
		t.Errorf("bins list -i: exit status %d, stdout %q, stderr %q; want v1.36.2 installed", code, out, errOut)
	}
	if out, errOut, code := runNew(t, "bins", "use", "1.36", "-i", "-p", "path", "--bin-dir", store); code != ExitOK || out != dir+"\n" {
		t.Errorf("bins use 1.36 -i -p path: exit status %d, stdout %q, stderr %q; want %s", code, out, errOut, dir)
	}
	if out, errOut, code := runNew(t, "bins", "cleanup", "1.36.2", "--bin-dir", store); code != ExitOK || !strings.Contains(out, "removed v1.36.2") {
		t.Errorf("bins cleanup 1.36.2: exit status %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("bins cleanup left %s (%v)", dir, err)
	}
}

// TestAffectedUsage: affected refuses a command line it cannot run, saying
// what is missing, with exit status 2.
func TestAffectedUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"affected"}, "--since and --coverage are required"},
		{[]string{"affected", "--since", "HEAD"}, "--since and --coverage are required"},
		{[]string{"affected", "--since", "HEAD", "--coverage", "x", "--shard", "4/3"}, "--shard"},
		{[]string{"affected", "--since", "HEAD", "--coverage", "x", "--timings", "r.json"}, "give --shard K/N with it"},
		{[]string{"affected", "extra", "--since", "HEAD", "--coverage", "x"}, `unexpected arguments ["extra"]`},
	} {
		if _, errOut, code := runNew(t, tc.args...); code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit status %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	// A record that is not there is a failure, not a usage error.
	if _, errOut, code := runNew(t, "affected", "--since", "HEAD", "--coverage", t.TempDir()+"/none"); code != ExitFailure || errOut == "" {
		t.Errorf("a missing record: exit status %d, %q; want 1 and why", code, errOut)
	}
}
