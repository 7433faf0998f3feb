package gobuild

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// progressEvery is how often a build reports progress.
const progressEvery = 10 * time.Second

// compile builds c at version, commit stamped in, its main package pkg,
// from the build module modDir into bin, reporting progress on out as it
// goes. The binary is written beside bin and
// renamed into place once built, so that bin is never half written.
func compile(ctx context.Context, out io.Writer, c component.Component, version versions.Version, commit, modDir, pkg, bin string) error {
	start := time.Now()
	fmt.Fprintf(out, "%s %s: building from %s@v%s (a cold build takes minutes; the Go build cache makes the next one fast)\n",
		c.Name, version, c.Module, version)
	total := countDeps(ctx, modDir, pkg)
	tmp := bin + ".tmp"
	cmd := goBuild(ctx, c, version, commit, modDir, pkg, tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting go build: %w", err)
	}
	if output, err := awaitBuild(out, cmd, stderr, c.Name, total, start); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("building %s %s failed (%v):\n%s", c.Name, version, err, output)
	}
	return install(ctx, out, c, version, tmp, bin, start)
}

// goBuild is the command that builds c at version, its version and commit
// stamped in, from its main package pkg in the build module modDir into out: without cgo, so that
// the binary runs on any host of its platform, and with -v, so that it
// names each package it compiles (awaitBuild counts them).
func goBuild(ctx context.Context, c component.Component, version versions.Version, commit, modDir, pkg, out string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-trimpath", "-ldflags", c.LDFlags(version, commit), "-o", out, pkg)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// awaitBuild waits for cmd, a started goBuild whose standard error is
// stderr, and every progressEvery prints how many of about total packages
// it has compiled. It returns what the build printed besides package names,
// which explains a failure.
func awaitBuild(out io.Writer, cmd *exec.Cmd, stderr io.Reader, name string, total int, start time.Time) (string, error) {
	var compiled atomic.Int64
	var output bytes.Buffer
	done := make(chan error, 1)
	go func() {
		scanBuildOutput(stderr, &compiled, &output)
		done <- cmd.Wait() // only once stderr is read to its end
	}()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			fmt.Fprintf(out, "  %s: %d of about %d packages compiled, %s\n", name, compiled.Load(), total, time.Since(start).Round(time.Second))
		case err := <-done:
			return output.String(), err
		}
	}
}

// scanBuildOutput reads what `go build -v` prints: a line that is a bare
// package path counts one package compiled; any other line (it has a space
// or a colon: an error, a note) is kept in other.
func scanBuildOutput(r io.Reader, compiled *atomic.Int64, other *bytes.Buffer) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.ContainsAny(line, " :") {
			other.WriteString(line + "\n")
			continue
		}
		compiled.Add(1)
	}
}

// install renames a freshly built tmp to bin, writable by its owner only
// (go build makes it 0777 less the umask, which may leave it writable by
// its group: the store would refuse it), and checks that it reports
// version, which its stamping should have made it.
func install(ctx context.Context, out io.Writer, c component.Component, version versions.Version, tmp, bin string, start time.Time) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return err
	}
	if ok, got := component.ReportsVersion(ctx, bin, c, version); !ok {
		return fmt.Errorf("built %s, but it reports %q instead of version %s", bin, got, version)
	}
	fmt.Fprintf(out, "%s %s: built in %s -> %s\n", c.Name, version, time.Since(start).Round(time.Second), bin)
	return nil
}

// countDeps is how many packages building pkg in dir involves, for the
// progress report; 0 when the go command cannot say.
func countDeps(ctx context.Context, dir, pkg string) int {
	out, err := goproxy.Go(ctx, dir, "list", "-deps", pkg)
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}
