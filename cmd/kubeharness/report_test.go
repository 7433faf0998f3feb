package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedRun copies the run harness/report's tests recorded (one failed
// spec) into a new directory.
func recordedRun(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "..", "harness", "report", "testdata", "runs", "one"))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestReport(t *testing.T) {
	dir := recordedRun(t)
	out, errOut, code := kubeharness(t, "report", dir, "--rerun", "make e2e FOCUS={{.Focus}}")
	index := filepath.Join(dir, "report", "index.html")
	if code != 0 || out != index+"\n" || errOut != "" {
		t.Fatalf("report: exit status %d, stdout %q, stderr %q; want 0 and the page's path", code, out, errOut)
	}
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "make e2e FOCUS=&#39;widgets rejects a &lt;b&gt;huge&lt;/b&gt; widget &amp; says why&#39;") {
		t.Error("the page does not show the --rerun command for the failed spec")
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "summary.json")); err != nil {
		t.Errorf("no summary for the next run: %v", err)
	}
}

func TestReportMarkdown(t *testing.T) {
	dir := recordedRun(t)
	out, errOut, code := kubeharness(t, "report", "--markdown", dir)
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "### ❌ report fixture: FAILED\n") {
		t.Fatalf("report --markdown: exit status %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "report")); !os.IsNotExist(err) {
		t.Errorf("report --markdown wrote %s (%v); it writes nothing", filepath.Join(dir, "report"), err)
	}
}

func TestReportWithoutARun(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{empty, []string{"no Ginkgo JSON report at " + filepath.Join(empty, "report.json"),
			"--json-report=report.json --output-dir=" + empty, "'make e2e' does", "--json-report"}},
		{filepath.Join(empty, "missing"), []string{filepath.Join(empty, "missing") + " is not a directory", "--output-dir"}},
	} {
		out, errOut, code := kubeharness(t, "report", tc.dir)
		if code != 1 || out != "" {
			t.Errorf("report %s: exit status %d, stdout %q; want 1 and nothing", tc.dir, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("report %s: %q lacks %q (what was wrong, where, what to do)", tc.dir, errOut, w)
			}
		}
	}
}

// TestReportSourceRoot: the failures' source lines come from below
// --source-root only; by default the Go module the command runs in.
func TestReportSourceRoot(t *testing.T) {
	const lines = `<tr class="hit"><td class="n">119</td>`
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{name: "the working directory's Go module", want: lines},
		{name: "--source-root naming the checkout", flags: []string{"--source-root", filepath.Join("..", "..")}, want: lines},
		{name: "--source-root naming another directory", flags: []string{"--source-root", t.TempDir()},
			want: "source lines not shown: the file is not below the source root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := recordedRun(t)
			out, errOut, code := kubeharness(t, append([]string{"report", dir}, tc.flags...)...)
			if code != 0 {
				t.Fatalf("report: exit status %d, stdout %q, stderr %q", code, out, errOut)
			}
			page, err := os.ReadFile(filepath.Join(dir, "report", "index.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), tc.want) {
				t.Errorf("the page lacks %s", tc.want)
			}
		})
	}
	out, _, code := kubeharness(t, "report", "--help")
	if code != 0 || !strings.Contains(out, "--source-root") || !strings.Contains(out, "below the source root") {
		t.Errorf("report --help: exit status %d; want it to say where source lines are read from:\n%s", code, out)
	}
}
