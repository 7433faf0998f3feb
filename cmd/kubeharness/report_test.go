package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
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
			"--json-report=report.json --output-dir=" + empty, "or name the report the run wrote with --json-report", "--json-report"}},
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

// TestReportRefusesALinkedReportDirectory: a symbolic link at DIR/report
// (planted to lead the page and summary elsewhere) is refused, and the
// error says how to write the page anyway.
func TestReportRefusesALinkedReportDirectory(t *testing.T) {
	dir := recordedRun(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "report")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := kubeharness(t, "report", dir)
	if code != 1 || out != "" {
		t.Errorf("report: exit status %d, stdout %q; want 1 and nothing", code, out)
	}
	for _, w := range []string{filepath.Join(dir, "report"), "is a symbolic link", "pass --out"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("report: %q lacks %q", errOut, w)
		}
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("report wrote %v where the link led", entries)
	}
}

// cliTimeout bounds how long a test waits for a kubeharness it started
// that should end at once: one that does not is killed, and the test
// fails rather than hangs.
const cliTimeout = 30 * time.Second

// startCLI starts this test binary as kubeharness (TestMain) with args,
// with stdin as standard input (nil: none).
func startCLI(t *testing.T, ctx context.Context, stdin io.Reader, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(append(os.Environ(), asKubeharness+"=1"), env...)
	cmd.Stdin = stdin
	return cmd
}

// mkfifo makes a named pipe at path, or skips the test where there are
// none.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system on Windows")
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReportAndShardRefuseANamedPipe: a report.json, a history's
// summary.json or a --dry-run report that is a named pipe no one writes
// is refused at once, by kubeharness itself (this test binary as the
// CLI), rather than waited on for ever.
func TestReportAndShardRefuseANamedPipe(t *testing.T) {
	base := t.TempDir()
	pipeRun := filepath.Join(base, "pipe-run")
	if err := os.Mkdir(pipeRun, 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(pipeRun, "report.json"))
	history := filepath.Join(base, "history")
	if err := os.Mkdir(history, 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(history, "summary.json"))
	dryRun := filepath.Join(base, "dry-run.json")
	mkfifo(t, dryRun)
	// A reader blocked opening a pipe returns once a writer opens it:
	// whatever a failing kubeharness left behind is let go.
	t.Cleanup(func() {
		for _, p := range []string{filepath.Join(pipeRun, "report.json"), filepath.Join(history, "summary.json"), dryRun} {
			if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
				f.Close()
			}
		}
	})
	merged := filepath.Join(base, "merged")

	for _, tc := range []struct {
		name string
		args []string
		code int
		// want is in its standard error, or, with page, on the page.
		want, page string
	}{
		{name: "report", args: []string{"report", pipeRun}, code: 1,
			want: filepath.Join(pipeRun, "report.json") + " is a named pipe, not a regular file as a Ginkgo JSON report is"},
		{name: "report merge --history", args: []string{"report", "merge", "--out", merged, "--history", history, recordedRun(t)}, code: 0,
			page: filepath.Join(merged, "index.html"), want: filepath.Join(history, "summary.json") + " is a named pipe, not a regular file as a run summary is"},
		{name: "shard", args: []string{"shard", "--dry-run", dryRun, "--shard", "1/2"}, code: 1,
			want: dryRun + " is a named pipe, not a regular file as a Ginkgo JSON report is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
			defer cancel()
			cmd := startCLI(t, ctx, nil, nil, tc.args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("kubeharness %s still ran after %s: it waits on the named pipe", strings.Join(tc.args, " "), cliTimeout)
			}
			var exit *exec.ExitError
			if code := 0; errors.As(err, &exit) {
				code = exit.ExitCode()
				if code != tc.code {
					t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
				}
			} else if err != nil || tc.code != 0 {
				t.Fatalf("kubeharness %s: %v, want exit status %d; stderr:\n%s", strings.Join(tc.args, " "), err, tc.code, stderr.String())
			}
			got := stderr.String()
			if tc.page != "" {
				page, err := os.ReadFile(tc.page)
				if err != nil {
					t.Fatal(err)
				}
				got = strings.ReplaceAll(string(page), "&#39;", "'")
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("%s lacks %q:\n%s", map[bool]string{true: "the page", false: "standard error"}[tc.page != ""], tc.want, got)
			}
		})
	}
}
