package binaries

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// keepEtcd reports whether dir holds a working etcd, c, for Kubernetes
// version, linking the Reuse store's into it if need be. It is asked only
// when versions.yaml pins no etcd for version: then any working etcd will
// do (one built inside the repository with the pinned etcd, say).
func (b *Builder) keepEtcd(ctx context.Context, c Component, version versions.Version, dir string) bool {
	bin := filepath.Join(dir, c.Name)
	if got, err := BinaryVersion(ctx, bin, c); err == nil {
		fmt.Fprintf(b.out(), "%s %s: kept in %s (no %s pins one for Kubernetes %s)\n", c.Name, got, dir, versions.LockfileName, version)
		return true
	}
	src, ok := b.reuseSource(c, dir)
	if !ok || !b.trustedReuse(c, src) {
		return false
	}
	if got, err := BinaryVersion(ctx, src, c); err == nil && store.Link(src, bin) == nil {
		fmt.Fprintf(b.out(), "%s %s: reused %s\n", c.Name, got, src)
		return true
	}
	return false
}

// upToDate reports whether bin is c at version with its commit stamped,
// and, for a component with a main of kubeharness's, built from that main
// as it is now.
func (b *Builder) upToDate(ctx context.Context, bin string, c Component, version versions.Version) bool {
	if ok, _ := reportsVersion(ctx, bin, c, version); !ok {
		return false
	}
	if c.main != nil {
		if info, err := buildinfo.ReadFile(bin); err != nil || info.Path != mainModulePath(c) {
			return false
		}
	}
	_, ok := stampedCommit(ctx, bin, c)
	return ok
}

// reportsVersion runs the binary's version flag and checks that it names
// version; got is what it printed.
func reportsVersion(ctx context.Context, bin string, c Component, version versions.Version) (ok bool, got string) {
	if _, err := os.Stat(bin); err != nil {
		return false, ""
	}
	out, err := exec.CommandContext(ctx, bin, strings.Fields(c.VersionFlag)...).CombinedOutput()
	got = strings.TrimSpace(string(out))
	if err != nil {
		return false, got
	}
	want := "v" + version.String()
	if c.Module == Etcd.Module {
		want = "etcd Version: " + version.String()
	}
	return strings.Contains(got, want+"\n") || strings.HasSuffix(got, want), got
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

// reuseSource is where the Reuse store keeps c for the version whose
// directory in this store is dir; ok is false without a Reuse store, or
// when the Reuse store is this one.
func (b *Builder) reuseSource(c Component, dir string) (src string, ok bool) {
	if b.Reuse == "" {
		return "", false
	}
	src = filepath.Join(b.Reuse, "k8s", filepath.Base(dir), c.Name)
	return src, src != filepath.Join(dir, c.Name)
}

// trustedReuse reports whether src, c in the Reuse store, exists and
// nobody but the caller and root could have put it there (checkStore); a
// binary that fails that is reported, neither run nor reused, and c is
// provided otherwise.
func (b *Builder) trustedReuse(c Component, src string) bool {
	if _, err := os.Stat(src); err != nil {
		return false
	}
	if err := checkStore(b.Reuse, filepath.Dir(src), c.Name); err != nil {
		fmt.Fprintf(b.out(), "%s: not reusing %s (%v); providing it otherwise\n", c.Name, src, err)
		return false
	}
	return true
}

// reuseUpToDate links c into dir from the Reuse store when the Reuse
// store's is up to date: at version and stamped, or downloaded with the
// same Kubernetes version (archive.current); it reports whether it did. A
// link that fails is reported, and c is provided otherwise.
func (b *Builder) reuseUpToDate(ctx context.Context, c Component, version versions.Version, dir string, archive *envtestArchive) bool {
	src, ok := b.reuseSource(c, dir)
	if !ok || !b.trustedReuse(c, src) {
		return false
	}
	label := version.String()
	current := !version.IsZero() && b.upToDate(ctx, src, c, version)
	if !current {
		label, current = archive.current(ctx, c, src)
	}
	if !current {
		return false
	}
	if err := store.Link(src, filepath.Join(dir, c.Name)); err != nil {
		fmt.Fprintf(b.out(), "%s %s: cannot reuse %s (%v); providing it otherwise\n", c.Name, label, src, err)
		return false
	}
	fmt.Fprintf(b.out(), "%s %s: reused %s\n", c.Name, label, src)
	return true
}
