package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// commandPaths lists every command of the tree below root, hidden ones
// included, as the arguments that name it.
func commandPaths(root *cobra.Command) [][]string {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, []string{})
	return paths
}

// TestHelp: every command answers --help, -h and `help COMMAND` on
// standard output with exit status 0.
func TestHelp(t *testing.T) {
	paths := commandPaths(newRootCommand())
	want := []string{"bins", "bins use", "bins list", "bins cleanup", "bench", "kind up", "kind down", "kind load", "kind export-logs",
		"deploy", "undeploy", "lockfile", "env up", "env down", "env status", "env serve", "rbac-audit", "report", "version", "completion"}
	names := map[string]bool{}
	for _, p := range paths {
		names[strings.Join(p, " ")] = true
	}
	for _, w := range want {
		if !names[w] {
			t.Errorf("no command %q in the tree", w)
		}
	}
	for _, path := range paths {
		name := strings.Join(append([]string{"kubeharness"}, path...), " ")
		for _, args := range [][]string{append(path, "--help"), append(path, "-h"), append([]string{"help"}, path...)} {
			out, errOut, code := kubeharness(t, args...)
			if code != 0 || !strings.Contains(out, "Usage:\n  "+name) || errOut != "" {
				t.Errorf("kubeharness %s: exit status %d, stdout %q, stderr %q; want 0 and the usage of %s", strings.Join(args, " "), code, out, errOut, name)
			}
		}
	}
	out, _, _ := kubeharness(t, "--help")
	for _, w := range []string{"Exit status:", "0  success", "1  the command failed", "2  usage error"} {
		if !strings.Contains(out, w) {
			t.Errorf("kubeharness --help does not document the exit status (%q):\n%s", w, out)
		}
	}
	if out, _, _ := kubeharness(t, "env", "--help"); !strings.Contains(out, "\n  status ") || strings.Contains(out, "\n  serve ") {
		t.Errorf("kubeharness env --help shows the hidden serve, or not status:\n%s", out)
	}
}

// TestUsageErrors: a command line that cannot run exits 2 with one error
// naming the problem, and a pointer to the command's help instead of it.
func TestUsageErrors(t *testing.T) {
	t.Setenv("IMG", "")
	t.Setenv(versions.EnvVar, "")
	for _, tc := range []struct {
		args    []string
		command string // whose help the hint names
		want    string
	}{
		{nil, "kubeharness", "missing command: name one of affected, bench, bins, deploy, env, kind, lockfile, rbac-audit, report, shard, undeploy, version"},
		{[]string{"frobnicate"}, "kubeharness", `unknown command "frobnicate" for "kubeharness"`},
		{[]string{"bnis"}, "kubeharness", `unknown command "bnis" for "kubeharness"; did you mean "bins"?`},
		{[]string{"--bogus"}, "kubeharness", "unknown flag: --bogus"},
		{[]string{"kind"}, "kubeharness kind", "missing command: name one of down, export-logs, load, up"},
		{[]string{"kind", "sideways"}, "kubeharness kind", `unknown command "sideways" for "kubeharness kind"`},
		{[]string{"kind", "load"}, "kubeharness kind load", "name the docker images to load"},
		{[]string{"kind", "up", "--bogus"}, "kubeharness kind up", "unknown flag: --bogus"},
		{[]string{"env", "stop"}, "kubeharness env", `unknown command "stop" for "kubeharness env"`},
		{[]string{"env", "status", "extra"}, "kubeharness env status", `unexpected arguments ["extra"]: env status takes none`},
		{[]string{"env", "up", "--timeout", "soon"}, "kubeharness env up", `invalid argument "soon" for "--timeout" flag`},
		{[]string{"bins", "usee"}, "kubeharness bins", `unknown command "usee" for "kubeharness bins"; did you mean "use"?`},
		{[]string{"bins", "1.37", "1.36"}, "kubeharness bins", `unexpected arguments ["1.36"]: bins takes at most one, the VERSION`},
		{[]string{"bins", "--version", "1.36", "1.37"}, "kubeharness bins", "the VERSION argument 1.37 and --version 1.36 disagree"},
		{[]string{"bins", "-version", "1.37"}, "kubeharness bins", "unknown shorthand flag: 'v' in -version; did you mean --version?"},
		{[]string{"bins", "use", "--version", "1.37"}, "kubeharness bins use", "unknown flag: --version"},
		{[]string{"bins", "list", "1.37", "extra"}, "kubeharness bins list", `unexpected arguments ["extra"]: bins list takes at most one, the VERSION`},
		{[]string{"bins", "cleanup", "one"}, "kubeharness bins cleanup", "one"},
		{[]string{"bench", "--starts", "three"}, "kubeharness bench", `invalid argument "three" for "--starts" flag`},
		{[]string{"bench", "--starts", "3"}, "kubeharness bench", "--starts=3: a median needs at least 5 starts"},
		{[]string{"bench", "now"}, "kubeharness bench", `unexpected arguments ["now"]: bench takes none`},
		{[]string{"deploy"}, "kubeharness deploy", "name the manager image with --image or $IMG"},
		{[]string{"deploy", "--wait=maybe", "--image", "x"}, "kubeharness deploy", `invalid argument "maybe" for "--wait" flag`},
		{[]string{"undeploy", "--context"}, "kubeharness undeploy", "flag needs an argument: --context"},
		{[]string{"lockfile"}, "kubeharness lockfile", "say --shell or --matrix"},
		{[]string{"lockfile", "--matrix", "1.37"}, "kubeharness lockfile", `unexpected arguments ["1.37"]: lockfile --matrix takes none`},
		{[]string{"lockfile", "--matrix", "--version", "1.37"}, "kubeharness lockfile", "--matrix lists every version; it takes no --version"},
		{[]string{"lockfile", "--matrix", "--lane", "gke"}, "kubeharness lockfile", `--lane="gke": use envtest or kind`},
		{[]string{"lockfile", "--shell", "--lane", "kind"}, "kubeharness lockfile", "--lane picks versions for --matrix"},
		{[]string{"rbac-audit"}, "kubeharness rbac-audit", "name the audit logs to read"},
		{[]string{"rbac-audit", "--rbac=", "x.log"}, "kubeharness rbac-audit", "--rbac: name at least one kustomization directory"},
		{[]string{"report", "a", "b"}, "kubeharness report", `unexpected arguments ["b"]: report takes one directory`},
		{[]string{"report", "--rerun", "make {{.Focus", "."}, "kubeharness report", `--rerun "make {{.Focus": template: rerun:1: unclosed action`},
		{[]string{"report", "merge", "a"}, "kubeharness report merge", "--out: name the directory"},
		{[]string{"report", "merge", "--out", "x"}, "kubeharness report merge", "name the run directories to merge"},
		{[]string{"shard", "--shard", "1/3"}, "kubeharness shard", "--dry-run and --shard are required"},
		{[]string{"shard", "--dry-run", "d.json", "--shard", "4/3"}, "kubeharness shard", `--shard: shard "4/3": want k/n`},
		{[]string{"shard", "extra"}, "kubeharness shard", `unexpected arguments ["extra"]: shard takes none`},
		{[]string{"version", "extra"}, "kubeharness version", `unexpected arguments ["extra"]: version takes none`},
		{[]string{"version", "-o", "yaml"}, "kubeharness version", `--output "yaml": want text or json`},
		{[]string{"help", "nosuch"}, "kubeharness help", `unknown command "nosuch" for "kubeharness"`},
		{[]string{"completion", "tcsh"}, "kubeharness completion", `unknown command "tcsh" for "kubeharness completion"`},
	} {
		out, errOut, code := kubeharness(t, tc.args...)
		want := tc.command + ": "
		if code != 2 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, tc.want) {
			t.Errorf("kubeharness %q: exit status %d, stderr %q; want 2 and %q", tc.args, code, errOut, want+"…"+tc.want)
		}
		if hint := "\nRun '" + tc.command + " --help' for usage.\n"; !strings.HasSuffix(errOut, hint) || strings.Count(errOut, "\n") != 2 {
			t.Errorf("kubeharness %q printed %q; want the error once, then %q", tc.args, errOut, hint[1:])
		}
		if out != "" {
			t.Errorf("kubeharness %q printed %q on standard output", tc.args, out)
		}
	}
}

// TestDoubleDash: "--" ends the flags, so that an argument may start with
// a dash.
func TestDoubleDash(t *testing.T) {
	_, errOut, code := kubeharness(t, "bins", "--print-dir", "--", "--version")
	if code != 2 || !strings.Contains(errOut, `unknown command "--version" for "kubeharness bins"`) {
		t.Errorf("bins --print-dir -- --version: exit status %d, %q; want --version taken as the argument", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	out, errOut, code := kubeharness(t, "version")
	if code != 0 || errOut != "" {
		t.Fatalf("version: exit status %d, stderr %q", code, errOut)
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	lock, err := versions.LoadLockfile(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubeharness: ",
		"go:          " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
		"kubernetes:  " + lock.Default.String() + " (default in " + root + "/versions.yaml)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version printed\n%s\nwant %q", out, want)
		}
	}

	out, _, code = kubeharness(t, "version", "-o", "json")
	var v struct {
		Go          string `json:"go"`
		Kubeharness struct {
			Version string `json:"version"`
		} `json:"kubeharness"`
		Kubernetes struct {
			Default versions.Version `json:"default"`
		} `json:"kubernetes"`
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("version -o json: exit status %d, %v:\n%s", code, err, out)
	}
	if v.Go != runtime.Version() || v.Kubernetes.Default != lock.Default || v.Kubeharness.Version == "" {
		t.Errorf("version -o json: %+v", v)
	}

	// Outside the repository there is no versions.yaml: that line says so,
	// and the command still succeeds.
	t.Chdir(t.TempDir())
	out, errOut, code = kubeharness(t, "version")
	if code != 0 || !strings.Contains(out, "go:          "+runtime.Version()) || !strings.Contains(out, "kubernetes:  unavailable: no versions.yaml above") {
		t.Errorf("version outside the repository: exit status %d, stdout %q, stderr %q", code, out, errOut)
	}
}
