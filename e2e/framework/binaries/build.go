package binaries

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/mod/modfile"
)

// Component is one control-plane binary and the Go module it is built from.
type Component struct {
	// Name is the binary's file name.
	Name string
	// Module is the Go module the binary's main package lives in.
	Module string
	// Package is the main package built.
	Package string
	// HackDir is the committed build module below hack/controlplane, used
	// when its pinned version is the one asked for.
	HackDir string
	// VersionFlag prints the binary's version; its output must contain the
	// version the binary was built from.
	VersionFlag string
	// infoFlag prints the binary's full version information, gitCommit
	// included ("" for components that stamp no commit).
	infoFlag string
	// ldflags stamps the version, and the git commit it was tagged from
	// ("" when unknown), into the binary.
	ldflags func(version, commit string) string
}

var (
	// KubeAPIServer is built from k8s.io/kubernetes with every staging module
	// replaced by its published version.
	KubeAPIServer = Component{
		Name: "kube-apiserver", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-apiserver",
		HackDir: "hack/controlplane", VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
	}
	// KubeControllerManager is built like kube-apiserver; the envtest
	// provider adds it where specs need garbage collection or CSR signing.
	KubeControllerManager = Component{
		Name: "kube-controller-manager", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-controller-manager",
		HackDir: "hack/controlplane", VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
	}
	// Etcd is built from go.etcd.io/etcd/server/v3, whose root is etcd's main package.
	Etcd = Component{
		Name: "etcd", Module: "go.etcd.io/etcd/server/v3", Package: "go.etcd.io/etcd/server/v3",
		HackDir: "hack/controlplane/etcd", VersionFlag: "--version",
		ldflags: func(v, _ string) string { return "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v" + v },
	}
	// Kubectl is built like kube-apiserver; envtest's asset set includes it.
	Kubectl = kubeComponent("kubectl")
)

// DefaultComponents are what the envtest provider needs.
var DefaultComponents = []Component{Etcd, KubeAPIServer}

// EnvtestComponents are the binaries an envtest asset directory holds, the
// set `kubeharness bins use` installs: etcd, kube-apiserver and kubectl.
var EnvtestComponents = []Component{Etcd, KubeAPIServer, Kubectl}

// NodeComponents are what a kind node image needs besides the control
// plane: the node agent, the cluster bootstrapper, kubectl, and the
// scheduler and proxy kubeadm runs as static Pods and a DaemonSet.
var NodeComponents = []Component{
	kubeComponent("kubelet"), kubeComponent("kubeadm"), Kubectl,
	kubeComponent("kube-scheduler"), kubeComponent("kube-proxy"),
}

// kubeComponent is a k8s.io/kubernetes command built like kube-apiserver.
func kubeComponent(name string) Component {
	c := KubeAPIServer
	c.Name, c.Package = name, "k8s.io/kubernetes/cmd/"+name
	switch name {
	case "kubectl":
		c.VersionFlag, c.infoFlag = "version --client", "version --client -o json"
	case "kubeadm":
		c.VersionFlag, c.infoFlag = "version -o short", "version -o json"
	}
	return c
}

// kubeLDFlags stamps the version the way Kubernetes' own build does
// (hack/lib/version.sh); without it the binary reports v0.0.0-master and
// clients' version discovery breaks. commit is the git commit the version
// was tagged from, as the Go module proxy reports it; when it reports none
// gitCommit is stamped empty rather than left at the source's placeholder.
func kubeLDFlags(v, commit string) string {
	parts := strings.SplitN(v, ".", 3)
	var b strings.Builder
	b.WriteString("-s -w")
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&b, " -X %s.gitVersion=v%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitCommit=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z",
			pkg, v, pkg, parts[0], pkg, parts[1], pkg, commit, pkg, pkg)
	}
	return b.String()
}

// commitPlaceholder is what k8s.io/component-base/version.gitCommit says
// in a build that did not stamp it.
const commitPlaceholder = "$Format:%H$"

// gitCommitRE finds the commit in `--version=raw` (GitCommit:"…") and in
// `version -o json` ("gitCommit": "…") output.
var gitCommitRE = regexp.MustCompile(`(?i)"?gitCommit"?\s*:\s*"([^"]*)"`)

// stampedCommit returns the git commit a binary reports; ok is false when
// the binary cannot say, or still carries the unstamped placeholder (a
// build from before commits were stamped, to be built again).
func stampedCommit(ctx context.Context, bin string, c Component) (commit string, ok bool) {
	if c.infoFlag == "" {
		return "", true
	}
	out, err := exec.CommandContext(ctx, bin, strings.Fields(c.infoFlag)...).CombinedOutput()
	if err != nil {
		return "", false
	}
	m := gitCommitRE.FindSubmatch(out)
	if m == nil || string(m[1]) == commitPlaceholder {
		return "", false
	}
	return string(m[1]), true
}

// Commit returns the git commit module@version was tagged from, as the Go
// module proxy's metadata (Origin.Hash) gives it, or "" when it gives none.
func (b *Builder) Commit(ctx context.Context, module, version string) string {
	out, err := b.goOutput(ctx, "", "mod", "download", "-json", module+"@v"+version)
	if err != nil {
		return ""
	}
	var res struct{ Origin struct{ Hash string } }
	if json.Unmarshal(out, &res) != nil {
		return ""
	}
	return res.Origin.Hash
}

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

	commits map[string]string
}

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
func (b *Builder) lockfile() (*Lockfile, error) {
	if b.Root == "" {
		return &Lockfile{}, nil
	}
	return LoadLockfile(b.Root)
}

// Build makes sure the components for Kubernetes version exist in
// StoreDir(store, version), building what is missing, and returns that
// directory. version is a patch as Resolver.Resolve returns it.
func (b *Builder) Build(ctx context.Context, version string, components ...Component) (string, error) {
	if len(components) == 0 {
		components = DefaultComponents
	}
	if !patchRE.MatchString(version) {
		return "", fmt.Errorf("building Kubernetes %q: not a patch version; resolve the request first", version)
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
		modVersion := version
		if c.Module == Etcd.Module {
			if _, pinned := lock.Lookup(version); !pinned {
				// Without a pin any working etcd the version's directory
				// holds will do (one built inside the repository with the
				// pinned etcd, say); only a missing one is built.
				bin := filepath.Join(dir, c.Name)
				if got, err := BinaryVersion(ctx, bin, c); err == nil {
					fmt.Fprintf(b.out(), "%s %s: kept in %s (no %s pins one for Kubernetes %s)\n", c.Name, got, dir, LockfileName, version)
					continue
				}
				if b.Reuse != "" {
					src := filepath.Join(b.Reuse, "k8s", filepath.Base(dir), c.Name)
					if got, err := BinaryVersion(ctx, src, c); err == nil && src != bin && reuse(src, bin) == nil {
						fmt.Fprintf(b.out(), "%s %s: reused %s\n", c.Name, got, src)
						continue
					}
				}
			}
			if modVersion, err = b.EtcdVersion(ctx, lock, version); err != nil {
				return "", err
			}
		}
		if err := b.buildOne(ctx, c, modVersion, dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// ResolveVersion is Resolver.Resolve for callers holding a bare string: v
// counts as $K8S_VERSION's value when it equals it, else as a --version
// flag's.
func (b *Builder) ResolveVersion(ctx context.Context, lock *Lockfile, v string) (string, error) {
	req := Request{Value: v, Source: SourceFlag}
	if v == os.Getenv(VersionEnv) {
		req.Source = VersionEnv
	}
	return (&Resolver{Lock: lock, Proxy: b, Out: b.out()}).Resolve(ctx, req)
}

var _ Proxy = &Builder{}

// Lists implements Proxy with `go list -m`, which asks the proxy for the
// version's .info.
func (b *Builder) Lists(ctx context.Context, version string) (bool, error) {
	_, err := b.goOutput(ctx, "", "list", "-m", "-json", KubeAPIServer.Module+"@v"+version)
	if err == nil {
		return true, nil
	}
	if unreachable(err.Error()) {
		return false, errors.New(firstLine(err.Error()))
	}
	return false, nil
}

// Serves implements Proxy: it downloads k8s.io/kubernetes at version and
// every staging module it builds with.
func (b *Builder) Serves(ctx context.Context, version string) error {
	return b.checkComplete(ctx, version)
}

// unreachable reports whether a go command's error means the proxy could
// not be asked at all.
func unreachable(msg string) bool {
	for _, s := range []string{"dial tcp", "no such host", "i/o timeout", "connection refused", "TLS handshake", "network is unreachable", "disabled by GOPROXY=off", "context deadline exceeded"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// exists reports whether the proxy knows module@version (its .info), which
// it may while still refusing to serve the zip.
func (b *Builder) exists(ctx context.Context, module, version string) bool {
	_, err := b.goOutput(ctx, "", "list", "-m", "-json", module+"@v"+version)
	return err == nil
}

// EtcdVersion is the lockfile's etcd for version, or else the etcd server
// module that version of Kubernetes itself depends on.
func (b *Builder) EtcdVersion(ctx context.Context, lock *Lockfile, version string) (string, error) {
	if e, ok := lock.Lookup(version); ok {
		return e.Etcd, nil
	}
	path, err := b.goModFile(ctx, KubeAPIServer.Module, version)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading go.mod of Kubernetes %s: %w", version, err)
	}
	mf, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range mf.Require {
		if r.Mod.Path == Etcd.Module {
			fmt.Fprintf(b.out(), "Kubernetes %s is not in %s; building the etcd it depends on, %s\n", version, LockfileName, r.Mod.Version)
			return TrimV(r.Mod.Version), nil
		}
	}
	return "", fmt.Errorf("Kubernetes %s names no %s in its go.mod; add the version to %s with an etcd version", version, Etcd.Module, LockfileName)
}

// upToDate reports whether bin is c at version with its commit stamped.
func (b *Builder) upToDate(ctx context.Context, bin string, c Component, version string) bool {
	if ok, _ := b.hasVersion(ctx, bin, c, version); !ok {
		return false
	}
	_, ok := stampedCommit(ctx, bin, c)
	return ok
}

// reuse hard-links (or, across file systems, copies) src to dst.
func reuse(src, dst string) error {
	tmp := dst + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			_ = os.Remove(tmp)
			return err
		}
		if err := out.Close(); err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// commit is Commit for the module c is built from, asked once per Builder.
func (b *Builder) commit(ctx context.Context, c Component, version string) string {
	key := c.Module + "@" + version
	if v, ok := b.commits[key]; ok {
		return v
	}
	v := b.Commit(ctx, c.Module, version)
	if v == "" {
		fmt.Fprintf(b.out(), "%s %s: the Go module proxy reports no git commit for %s@v%s; gitCommit stays empty\n", c.Name, version, c.Module, version)
	}
	if b.commits == nil {
		b.commits = map[string]string{}
	}
	b.commits[key] = v
	return v
}

func (b *Builder) buildOne(ctx context.Context, c Component, version, dir string) error {
	bin := filepath.Join(dir, c.Name)
	if b.upToDate(ctx, bin, c, version) {
		fmt.Fprintf(b.out(), "%s %s: up to date in %s\n", c.Name, version, dir)
		return nil
	}
	if b.Reuse != "" {
		src := filepath.Join(b.Reuse, "k8s", filepath.Base(dir), c.Name)
		if src != bin && b.upToDate(ctx, src, c, version) {
			if err := reuse(src, bin); err == nil {
				fmt.Fprintf(b.out(), "%s %s: reused %s\n", c.Name, version, src)
				return nil
			} else {
				fmt.Fprintf(b.out(), "%s %s: cannot reuse %s (%v); building it\n", c.Name, version, src, err)
			}
		}
	}
	modDir, err := b.moduleDir(ctx, c, version)
	if err != nil {
		return err
	}

	start := time.Now()
	fmt.Fprintf(b.out(), "%s %s: building from %s@v%s (a cold build takes minutes; the Go build cache makes the next one fast)\n",
		c.Name, version, c.Module, version)
	total := b.countDeps(ctx, modDir, c.Package)
	commit := ""
	if c.infoFlag != "" {
		commit = b.commit(ctx, c, version)
	}

	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-trimpath", "-ldflags", c.ldflags(version, commit), "-o", tmp, c.Package)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting go build: %w", err)
	}
	var compiled atomic.Int64
	var tail bytes.Buffer // what go build says that is not a package name
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if strings.ContainsAny(line, " :") {
				tail.WriteString(line + "\n")
				continue
			}
			compiled.Add(1)
		}
	}()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	waitErr := make(chan error, 1)
	go func() { <-done; waitErr <- cmd.Wait() }()
	for {
		select {
		case <-ticker.C:
			fmt.Fprintf(b.out(), "  %s: %d of about %d packages compiled, %s\n", c.Name, compiled.Load(), total, time.Since(start).Round(time.Second))
		case err := <-waitErr:
			if err != nil {
				_ = os.Remove(tmp)
				return fmt.Errorf("building %s %s failed (%v):\n%s", c.Name, version, err, tail.String())
			}
			if err := os.Rename(tmp, bin); err != nil {
				return err
			}
			if ok, got := b.hasVersion(ctx, bin, c, version); !ok {
				return fmt.Errorf("built %s, but it reports %q instead of version %s", bin, got, version)
			}
			fmt.Fprintf(b.out(), "%s %s: built in %s -> %s\n", c.Name, version, time.Since(start).Round(time.Second), bin)
			return nil
		}
	}
}

// hasVersion runs the binary's version flag and checks that it names version.
func (b *Builder) hasVersion(ctx context.Context, bin string, c Component, version string) (bool, string) {
	if _, err := os.Stat(bin); err != nil {
		return false, ""
	}
	out, err := exec.CommandContext(ctx, bin, strings.Fields(c.VersionFlag)...).CombinedOutput()
	got := strings.TrimSpace(string(out))
	if err != nil {
		return false, got
	}
	re := "v" + version
	if c.Module == Etcd.Module {
		re = "etcd Version: " + version
	}
	return strings.Contains(got, re+"\n") || strings.HasSuffix(got, re), got
}

// moduleDir returns a module directory that builds c at version: the
// committed one under hack/ when it pins that version, or one generated
// under <store>/k8s/.src otherwise.
func (b *Builder) moduleDir(ctx context.Context, c Component, version string) (string, error) {
	if b.Root != "" {
		hack := filepath.Join(b.Root, c.HackDir)
		if pinned, err := requiredVersion(filepath.Join(hack, "go.mod"), c.Module); err == nil && TrimV(pinned) == version {
			return hack, nil
		}
	}
	dir := filepath.Join(b.store(), "k8s", ".src", strings.ReplaceAll(c.Module, "/", "_")+"@"+version)
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err == nil && declaresTool(filepath.Join(dir, "go.mod"), c.Package) {
		return dir, nil
	}
	fmt.Fprintf(b.out(), "%s: preparing a build module for %s@v%s in %s\n", c.Name, c.Module, version, dir)
	if err := b.download(ctx, c.Module, version); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mf := &modfile.File{}
	_ = mf.AddModuleStmt("kubeharness.local/controlplane")
	_ = mf.AddGoStmt("1.26")
	_ = mf.AddRequire(c.Module, "v"+version)
	if c.Module == KubeAPIServer.Module {
		// k8s.io/kubernetes requires its staging modules at v0.0.0 and
		// replaces them with ./staging; a dependent module must replace
		// each with its published v0.<minor>.<patch>.
		if err := b.checkComplete(ctx, version); err != nil {
			return "", err
		}
		staging, err := b.stagingModules(ctx, version)
		if err != nil {
			return "", err
		}
		for _, m := range staging {
			_ = mf.AddReplace(m, "", m, stagingVersion(version))
		}
	}
	for _, comp := range append([]Component{KubeAPIServer, KubeControllerManager, Etcd}, NodeComponents...) {
		if comp.Module == c.Module {
			_ = mf.AddTool(comp.Package)
		}
	}
	data, err := mf.Format()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), data, 0o644); err != nil {
		return "", err
	}
	if _, err := b.goOutput(ctx, dir, "mod", "tidy"); err != nil {
		_ = os.Remove(filepath.Join(dir, "go.sum"))
		return "", fmt.Errorf("resolving the dependencies of %s@v%s through the Go module proxy: %w", c.Module, version, err)
	}
	return dir, nil
}

// declaresTool reports whether the build module at gomod declares pkg as a
// tool; one generated before pkg was a component lacks its dependencies'
// go.sum entries and is generated again.
func declaresTool(gomod, pkg string) bool {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	mf, err := modfile.Parse(gomod, data, nil) // ParseLax drops tool lines
	if err != nil {
		return false
	}
	for _, t := range mf.Tool {
		if t.Path == pkg {
			return true
		}
	}
	return false
}

// checkComplete downloads k8s.io/kubernetes at version and every staging
// module it needs at the matching v0 version: the proxy sometimes serves the
// one and refuses some of the others.
func (b *Builder) checkComplete(ctx context.Context, version string) error {
	if err := b.download(ctx, KubeAPIServer.Module, version); err != nil {
		return err
	}
	staging, err := b.stagingModules(ctx, version)
	if err != nil {
		return err
	}
	v0 := stagingVersion(version)
	// One go command for them all; a module that fails is asked again
	// alone, for its error.
	args := []string{"mod", "download", "-json"}
	for _, m := range staging {
		args = append(args, m+"@"+v0)
	}
	if _, err := b.goOutput(ctx, "", args...); err == nil {
		return nil
	}
	for _, m := range staging {
		if err := b.download(ctx, m, strings.TrimPrefix(v0, "v")); err != nil {
			return fmt.Errorf("Kubernetes %s needs %s@%s: %w", version, m, v0, err)
		}
	}
	return nil
}

// stagingVersion is the published version of the staging modules that
// belong to Kubernetes version: 1.35.6 -> v0.35.6.
func stagingVersion(version string) string { return "v0" + strings.TrimPrefix(version, "1") }

func (b *Builder) stagingModules(ctx context.Context, version string) ([]string, error) {
	gomod, err := b.goModFile(ctx, KubeAPIServer.Module, version)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	mf, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	var mods []string
	for _, r := range mf.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			mods = append(mods, r.Old.Path)
		}
	}
	sort.Strings(mods)
	return mods, nil
}

// goModFile downloads module@version and returns the path of its go.mod in
// the module cache.
func (b *Builder) goModFile(ctx context.Context, module, version string) (string, error) {
	out, err := b.goOutput(ctx, "", "mod", "download", "-json", module+"@v"+version)
	var res struct{ GoMod, Error string }
	if jsonErr := json.Unmarshal(out, &res); jsonErr == nil && res.Error != "" {
		return "", b.downloadError(ctx, module, version, errors.New(res.Error))
	}
	if err != nil {
		return "", b.downloadError(ctx, module, version, err)
	}
	if res.GoMod == "" {
		return "", fmt.Errorf("go mod download named no go.mod for %s@v%s", module, version)
	}
	return res.GoMod, nil
}

func requiredVersion(gomod, module string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	mf, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range mf.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", gomod, module)
}

func (b *Builder) countDeps(ctx context.Context, dir, pkg string) int {
	out, err := b.goOutput(ctx, dir, "list", "-deps", pkg)
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}

// download fetches module@version into the module cache.
func (b *Builder) download(ctx context.Context, module, version string) error {
	out, err := b.goOutput(ctx, "", "mod", "download", "-json", module+"@v"+version)
	var res struct{ Error string }
	if jsonErr := json.Unmarshal(out, &res); jsonErr == nil && res.Error != "" {
		return b.downloadError(ctx, module, version, errors.New(res.Error))
	}
	if err != nil {
		return b.downloadError(ctx, module, version, err)
	}
	return nil
}

// downloadError explains a failed module download: an unreachable proxy, a
// version that does not exist, or one the proxy lists but will not serve.
func (b *Builder) downloadError(ctx context.Context, module, version string, err error) error {
	proxy, _ := b.goOutput(ctx, "", "env", "GOPROXY")
	where := fmt.Sprintf("the Go module proxy (GOPROXY=%s)", strings.TrimSpace(string(proxy)))
	msg := err.Error()
	if unreachable(msg) {
		return fmt.Errorf("cannot reach %s to download %s@v%s: %s; check GOPROXY and the network", where, module, version, firstLine(msg))
	}
	if !b.exists(ctx, module, version) {
		return fmt.Errorf("%s has no version v%s on %s", module, version, where)
	}
	if strings.Contains(msg, "403") || strings.Contains(msg, "not available") {
		return fmt.Errorf("%s lists %s@v%s but refuses to serve it (%s)", where, module, version, firstLine(msg))
	}
	return fmt.Errorf("downloading %s@v%s from %s: %w", module, version, where, err)
}

// goOutput runs the go command in dir (outside any module when empty) and
// returns its standard output; the error carries its standard error.
func (b *Builder) goOutput(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = os.Environ()
	if dir == "" {
		dir = os.TempDir()
		cmd.Env = append(cmd.Env, "GO111MODULE=on", "GOFLAGS=-mod=mod")
	}
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(strings.TrimSpace(stderr.String() + " " + err.Error()))
	}
	return out, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
