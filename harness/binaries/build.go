package binaries

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// progressEvery is how often a build reports progress.
const progressEvery = 10 * time.Second

// Builder builds control-plane binaries into a store laid out as
// setup-envtest's: <store>/k8s/<version>-<os>-<arch>/.
type Builder struct {
	// Root is the kubeharness repository root: its versions.yaml pins etcd
	// and its hack/controlplane modules build the pinned version. Empty
	// outside the repository: etcd is then the one Kubernetes' go.mod
	// names, and every build module is generated in the store.
	Root string
	// Store is the bin-dir the binaries go to; empty means Root's bin/.
	Store string
	// Reuse is another store whose binaries of the same version, stamped
	// alike, are hard-linked (or copied) instead of built again; empty
	// means none.
	Reuse string
	// Out receives progress; nil means os.Stderr.
	Out io.Writer

	// mu guards the memos below: a Resolver asks its Builder from several
	// goroutines at once.
	mu sync.Mutex
	// commits memoizes commit, by module@version.
	commits map[string]string
	// kubeGoMods memoizes readKubeGoMod, by Kubernetes version.
	kubeGoMods map[versions.Version]*kubeGoMod
}

// out is where progress goes: Out, or standard error.
func (b *Builder) out() io.Writer {
	if b.Out == nil {
		return os.Stderr
	}
	return b.Out
}

// store is the bin-dir Build writes to.
func (b *Builder) store() string {
	if b.Store != "" {
		return b.Store
	}
	return filepath.Join(b.Root, "bin")
}

// lockfile is Root's versions.yaml, or an empty one outside the repository.
func (b *Builder) lockfile() (*versions.Lockfile, error) {
	if b.Root == "" {
		return &versions.Lockfile{}, nil
	}
	return versions.LoadLockfile(b.Root)
}

// Build makes sure the components for Kubernetes version exist in
// StoreDir(store, version), building what is missing, and returns that
// directory. Builds of one binary into one directory take turns (lockDir):
// parallel test processes that each need it build it once, and the later
// ones find it up to date. version is a patch as versions.Resolver.Resolve returns it.
func (b *Builder) Build(ctx context.Context, version versions.Version, components ...Component) (string, error) {
	if len(components) == 0 {
		components = DefaultComponents
	}
	if version.IsZero() {
		return "", errors.New("building Kubernetes: no version given; resolve the request first")
	}
	lock, err := b.lockfile()
	if err != nil {
		return "", err
	}
	dir := StoreDir(b.store(), version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, c := range components {
		if err := b.provide(ctx, lock, c, version, dir); err != nil {
			return "", err
		}
		if c.Name == KubeAPIServer.Name {
			b.provideBeside(ctx, KubeAPIServerTest, version, dir)
		}
	}
	return dir, nil
}

// provideBeside builds c, a binary that only makes what it is built beside
// faster, into dir; a failure is reported and leaves dir without it, which
// its users take for "use the one beside". The main of KubeAPIServerTest is
// written against one Kubernetes minor's API and does not compile against
// every other.
func (b *Builder) provideBeside(ctx context.Context, c Component, version versions.Version, dir string) {
	if err := b.buildOne(ctx, c, version, dir); err != nil {
		fmt.Fprintf(b.out(), "%s %s: not built, control planes run kube-apiserver: %v\n", c.Name, version, err)
	}
}

// provide makes sure dir, the store directory of Kubernetes version, holds
// c. A Kubernetes component is built at version. etcd is built at the
// version lock pins for it; when lock pins none, a working etcd dir or the
// Reuse store already holds is kept, whatever its version, and only a
// missing one is built, at the version Kubernetes' go.mod requires.
func (b *Builder) provide(ctx context.Context, lock *versions.Lockfile, c Component, version versions.Version, dir string) error {
	if c.Module != Etcd.Module {
		return b.buildOne(ctx, c, version, dir)
	}
	if _, pinned := lock.Lookup(version); !pinned && b.keepEtcd(ctx, c, version, dir) {
		return nil
	}
	etcd, err := b.EtcdVersion(ctx, lock, version)
	if err != nil {
		return err
	}
	return b.buildOne(ctx, c, etcd, dir)
}

// EtcdVersion is the lockfile's etcd for version, or else the etcd server
// module that version of Kubernetes itself depends on, as its go.mod
// requires it.
func (b *Builder) EtcdVersion(ctx context.Context, lock *versions.Lockfile, version versions.Version) (versions.Version, error) {
	if e, ok := lock.Lookup(version); ok {
		return e.Etcd, nil
	}
	mod, err := b.readKubeGoMod(ctx, version)
	if err != nil {
		return versions.Version{}, err
	}
	if mod.etcd == "" {
		return versions.Version{}, fmt.Errorf("the go.mod of Kubernetes %s names no %s; add the version to %s with an etcd version", version, Etcd.Module, versions.LockfileName)
	}
	etcd, err := versions.Parse(mod.etcd)
	if err != nil {
		return versions.Version{}, fmt.Errorf("the go.mod of Kubernetes %s requires %s %s, which kubeharness cannot build (%v); add the version to %s with an etcd version", version, Etcd.Module, mod.etcd, err, versions.LockfileName)
	}
	fmt.Fprintf(b.out(), "Kubernetes %s is not in %s; building the etcd it depends on, %s\n", version, versions.LockfileName, etcd)
	return etcd, nil
}

// buildOne makes sure dir holds c built at version (its module's version:
// etcd's own for etcd). One already there, or in the Reuse store, at that
// version and stamped is kept; otherwise c is built.
func (b *Builder) buildOne(ctx context.Context, c Component, version versions.Version, dir string) error {
	unlock, err := lockDir(ctx, dir, c.Name, b.out())
	if err != nil {
		return err
	}
	defer unlock()
	bin := filepath.Join(dir, c.Name)
	if b.upToDate(ctx, bin, c, version) {
		fmt.Fprintf(b.out(), "%s %s: up to date in %s\n", c.Name, version, dir)
		return nil
	}
	if b.reuseUpToDate(ctx, c, version, dir) {
		return nil
	}
	modDir, err := b.moduleDir(ctx, c, version)
	if err != nil {
		return err
	}
	pkg := c.Package
	if c.main != nil {
		if modDir, err = b.mainModule(c, version, modDir); err != nil {
			return err
		}
		pkg = "."
	}
	return b.compile(ctx, c, version, modDir, pkg, bin)
}

// compile builds c at version, its main package pkg, from the build module
// modDir into bin, reporting progress as it goes. The binary is written beside bin and
// renamed into place once built, so that bin is never half written.
func (b *Builder) compile(ctx context.Context, c Component, version versions.Version, modDir, pkg, bin string) error {
	start := time.Now()
	fmt.Fprintf(b.out(), "%s %s: building from %s@v%s (a cold build takes minutes; the Go build cache makes the next one fast)\n",
		c.Name, version, c.Module, version)
	total := b.countDeps(ctx, modDir, pkg)
	tmp := bin + ".tmp"
	cmd := b.goBuild(ctx, c, version, modDir, pkg, tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting go build: %w", err)
	}
	if output, err := b.awaitBuild(cmd, stderr, c.Name, total, start); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("building %s %s failed (%v):\n%s", c.Name, version, err, output)
	}
	return b.install(ctx, c, version, tmp, bin, start)
}

// goBuild is the command that builds c at version, its version and commit
// stamped in, from its main package pkg in the build module modDir into out: without cgo, so that
// the binary runs on any host of its platform, and with -v, so that it
// names each package it compiles (awaitBuild counts them).
func (b *Builder) goBuild(ctx context.Context, c Component, version versions.Version, modDir, pkg, out string) *exec.Cmd {
	commit := ""
	if c.infoFlag != "" {
		commit = b.commit(ctx, c, version)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-trimpath", "-ldflags", c.ldflags(version, commit), "-o", out, pkg)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// awaitBuild waits for cmd, a started goBuild whose standard error is
// stderr, and every progressEvery prints how many of about total packages
// it has compiled. It returns what the build printed besides package names,
// which explains a failure.
func (b *Builder) awaitBuild(cmd *exec.Cmd, stderr io.Reader, name string, total int, start time.Time) (string, error) {
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
			fmt.Fprintf(b.out(), "  %s: %d of about %d packages compiled, %s\n", name, compiled.Load(), total, time.Since(start).Round(time.Second))
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

// install renames a freshly built tmp to bin and checks that it reports
// version, which its stamping should have made it.
func (b *Builder) install(ctx context.Context, c Component, version versions.Version, tmp, bin string, start time.Time) error {
	if err := os.Rename(tmp, bin); err != nil {
		return err
	}
	if ok, got := reportsVersion(ctx, bin, c, version); !ok {
		return fmt.Errorf("built %s, but it reports %q instead of version %s", bin, got, version)
	}
	fmt.Fprintf(b.out(), "%s %s: built in %s -> %s\n", c.Name, version, time.Since(start).Round(time.Second), bin)
	return nil
}

// countDeps is how many packages building pkg in dir involves, for the
// progress report; 0 when the go command cannot say.
func (b *Builder) countDeps(ctx context.Context, dir, pkg string) int {
	out, err := b.goOutput(ctx, dir, "list", "-deps", pkg)
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}

// commit is Commit for the module c is built from, asked once per Builder;
// a module the proxy gives no commit for is reported once.
func (b *Builder) commit(ctx context.Context, c Component, version versions.Version) string {
	key := c.Module + "@" + version.String()
	b.mu.Lock()
	v, ok := b.commits[key]
	b.mu.Unlock()
	if ok {
		return v
	}
	v = b.Commit(ctx, c.Module, version)
	if v == "" {
		fmt.Fprintf(b.out(), "%s %s: the Go module proxy reports no git commit for %s@v%s; gitCommit stays empty\n", c.Name, version, c.Module, version)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.commits == nil {
		b.commits = map[string]string{}
	}
	b.commits[key] = v
	return v
}
