package binaries

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries/store"
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
	// Binaries is where a missing etcd, kube-apiserver or kubectl comes
	// from: the official envtest archive or a build (Mode); empty means
	// $KUBEHARNESS_BINARIES, else ModeAuto.
	Binaries Mode
	// Index is the URL of the envtest release index; empty means
	// $KUBEHARNESS_ENVTEST_INDEX, else DefaultIndexURL. An archive's
	// selfLink may be relative to it (a mirror of index and archives).
	// The index is what vouches for an archive: the sha512 a download is
	// checked against comes from it. So it must be https://.
	Index string
	// InsecureIndex accepts an index over plain http:// all the same (a
	// mirror on a network the user trusts); false means
	// $KUBEHARNESS_ENVTEST_INDEX_INSECURE, when set to 1.
	InsecureIndex bool
	// HTTPClient fetches the index and archives; nil means one with short
	// connection timeouts that honours the environment's proxy settings.
	HTTPClient *http.Client

	// buildStep, when set, stands in for building c at version into bin
	// (tests, which do not compile Kubernetes).
	buildStep func(ctx context.Context, c Component, version versions.Version, bin string) error

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
// StoreDir(store, version) and returns that directory. A component missing
// there (or not up to date) is taken, by the Builder's Mode, from the
// official envtest archive of version when the archive holds it (etcd,
// kube-apiserver, kubectl), and otherwise built from the Go module proxy;
// each says on Out which way it came. Builds and downloads of one binary
// into one directory take turns (lockDir): parallel test processes that
// each need it provide it once, and the later ones find it up to date.
// version is a patch as versions.Resolver.Resolve returns it. A store
// others could write is refused before anything in it runs (checkStore),
// and partial downloads that killed runs left in the directory are
// removed.
func (b *Builder) Build(ctx context.Context, version versions.Version, components ...Component) (string, error) {
	if len(components) == 0 {
		components = DefaultComponents
	}
	if version.IsZero() {
		return "", errors.New("building Kubernetes: no version given; resolve the request first")
	}
	mode, err := b.mode()
	if err != nil {
		return "", err
	}
	lock, err := b.lockfile()
	if err != nil {
		return "", err
	}
	dir := StoreDir(b.store(), version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := checkStore(b.store(), dir, storeNames()...); err != nil {
		return "", err
	}
	store.RemoveStalePartials(dir, b.out())
	archive := &envtestArchive{b: b, mode: mode, kube: version, dir: dir}
	defer archive.close()
	for _, c := range components {
		if err := b.provide(ctx, lock, c, dir, archive); err != nil {
			return "", err
		}
		if c.Name == KubeAPIServer.Name {
			b.provideBeside(ctx, lock, KubeAPIServerTest, dir, archive)
		}
	}
	return dir, nil
}

// provideBeside builds c, a binary that only makes kube-apiserver start
// faster, into dir beside a kube-apiserver built from source; a failure is
// reported and leaves dir without it, which its users take for "use the one
// beside". Beside a downloaded kube-apiserver it is not built: building it
// compiles kube-apiserver, the minutes the download saved. The main of
// KubeAPIServerTest is written against one Kubernetes minor's API and does
// not compile against every other.
func (b *Builder) provideBeside(ctx context.Context, lock *versions.Lockfile, c Component, dir string, archive *envtestArchive) {
	if o, ok := ReadOrigin(dir, KubeAPIServer.Name); ok && o.How == OriginDownloaded {
		fmt.Fprintf(b.out(), "%s %s: not built beside a downloaded kube-apiserver; control planes run kube-apiserver\n", c.Name, archive.kube)
		return
	}
	if err := b.buildOne(ctx, lock, c, archive.kube, dir, archive); err != nil {
		fmt.Fprintf(b.out(), "%s %s: not built, control planes run kube-apiserver: %v\n", c.Name, archive.kube, err)
	}
}

// provide makes sure dir, the store directory of the archive's Kubernetes
// version, holds c. A Kubernetes component is wanted at that version. etcd
// is wanted at the version lock pins for it; when lock pins none, a
// working etcd dir or the Reuse store already holds is kept, whatever its
// version, and a missing one is downloaded, or built at the version
// Kubernetes' go.mod requires.
func (b *Builder) provide(ctx context.Context, lock *versions.Lockfile, c Component, dir string, archive *envtestArchive) error {
	if c.Module != Etcd.Module {
		return b.buildOne(ctx, lock, c, archive.kube, dir, archive)
	}
	e, pinned := lock.Lookup(archive.kube)
	if !pinned && b.keepEtcd(ctx, c, archive.kube, dir) {
		return nil
	}
	return b.buildOne(ctx, lock, c, e.Etcd, dir, archive)
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

// buildOne makes sure dir holds c at version (its module's version: etcd's
// own for etcd; zero for an etcd no lockfile pins, any of which will do).
// One already there, or in the Reuse store, up to date is kept; otherwise
// c is downloaded from archive, or built, and its Origin recorded.
func (b *Builder) buildOne(ctx context.Context, lock *versions.Lockfile, c Component, version versions.Version, dir string, archive *envtestArchive) error {
	unlock, err := store.Lock(ctx, dir, c.Name, b.out())
	if err != nil {
		return err
	}
	defer unlock()
	bin := filepath.Join(dir, c.Name)
	if !version.IsZero() && b.upToDate(ctx, bin, c, version) {
		fmt.Fprintf(b.out(), "%s %s: up to date in %s\n", c.Name, version, dir)
		return nil
	}
	if got, ok := archive.current(ctx, c, bin); ok {
		fmt.Fprintf(b.out(), "%s %s: up to date in %s (downloaded with Kubernetes %s)\n", c.Name, got, dir, archive.kube)
		return nil
	}
	if b.reuseUpToDate(ctx, c, version, dir, archive) {
		return nil
	}
	var why string
	switch {
	case !inArchive(c):
		why = "not in the envtest archive"
	case archive.mode == ModeBuild:
		why = ModeEnv + "=build"
	default:
		got, err := archive.install(ctx, c, bin)
		if err == nil {
			b.reportDownload(c, version, got, bin, archive)
			return nil
		}
		if archive.mode == ModeDownload {
			return fmt.Errorf("%s for Kubernetes %s: %s=download, and the download failed: %v (set %s=auto to build from the Go module proxy instead)",
				c.Name, archive.kube, ModeEnv, err, ModeEnv)
		}
		why = fmt.Sprintf("download unavailable (%v)", err)
	}
	if version.IsZero() {
		if version, err = b.EtcdVersion(ctx, lock, archive.kube); err != nil {
			return err
		}
	}
	fmt.Fprintf(b.out(), "%s %s: %s; building from the Go module proxy\n", c.Name, version, why)
	if err := b.build(ctx, c, version, bin); err != nil {
		return err
	}
	return recordBuilt(bin, c, archive.kube, version)
}

// reportDownload says that c, wanted at version (zero: any), came from
// archive into bin, reporting version got.
func (b *Builder) reportDownload(c Component, version versions.Version, got, bin string, archive *envtestArchive) {
	note := ""
	if c.Module == Etcd.Module && !version.IsZero() && got != version.String() {
		note = fmt.Sprintf(" (%s pins etcd %s for builds of Kubernetes %s; %s=build builds that one)", versions.LockfileName, version, archive.kube, ModeEnv)
	}
	fmt.Fprintf(b.out(), "%s %s: downloaded from %s, sha512 verified -> %s%s\n", c.Name, got, archive.ref.Name, bin, note)
}

// build builds c at version into bin from the Go module proxy.
func (b *Builder) build(ctx context.Context, c Component, version versions.Version, bin string) error {
	if b.buildStep != nil {
		return b.buildStep(ctx, c, version, bin)
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

// install renames a freshly built tmp to bin, writable by its owner only
// (go build makes it 0777 less the umask, which may leave it writable by
// its group: checkStore would refuse it), and checks that it reports
// version, which its stamping should have made it.
func (b *Builder) install(ctx context.Context, c Component, version versions.Version, tmp, bin string, start time.Time) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.Remove(tmp)
		return err
	}
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
