package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/envtestarchive"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Provide makes sure the components for Kubernetes version exist in the
// store's directory of version (StoreDir) and returns that directory. A
// component already there and up to date stays; one the Reuse store holds
// up to date is linked; the others are asked of the Sources in order,
// each saying on Out which way it came. Each binary is provided by one
// process at a time (store.Lock): parallel test processes that each need
// it provide it once, and the later ones find it up to date. version is a
// patch as versions.Resolver.Resolve returns it; etcd is wanted at the
// version versions.yaml (Root's) pins for it, else any working one. A
// store others could write is refused before anything in it runs, and
// partial downloads that killed runs left in the directory are removed.
// Beside a kube-apiserver built from source kube-apiserver-test is built
// too, where it compiles.
func (s Store) Provide(ctx context.Context, version versions.Version, components ...Component) (string, error) {
	if len(components) == 0 {
		components = DefaultComponents
	}
	if version.IsZero() {
		return "", errors.New("building Kubernetes: no version given; resolve the request first")
	}
	sources, mode, err := s.sources()
	if err != nil {
		return "", err
	}
	lock, err := s.lockfile()
	if err != nil {
		return "", err
	}
	disk := store.Store{Dir: s.Dir}
	dir := disk.VersionDir(version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := disk.Check(dir, store.Files(dir)...); err != nil {
		return "", err
	}
	store.RemoveStalePartials(dir, s.out())
	p := &provision{s: s, sources: sources, mode: mode, lock: lock, kube: version, dir: dir}
	if err := p.provide(ctx, components); err != nil {
		return "", p.explain(err)
	}
	if slices.ContainsFunc(components, isKubeAPIServer) {
		p.beside(ctx)
	}
	return dir, nil
}

// provision is one Provide under way.
type provision struct {
	s       Store
	sources []Source
	mode    Mode
	lock    *versions.Lockfile
	kube    versions.Version
	dir     string
}

// provide makes sure dir holds components: each is locked (in the order of
// their names, so that provisions of other sets do not wait on each other
// in a circle) until all are there.
func (p *provision) provide(ctx context.Context, components []Component) error {
	sorted := slices.Clone(components)
	slices.SortFunc(sorted, func(a, b Component) int { return strings.Compare(a.Name, b.Name) })
	sorted = slices.CompactFunc(sorted, func(a, b Component) bool { return a.Name == b.Name })
	var wants []Want
	for _, c := range sorted {
		unlock, err := store.Lock(ctx, p.dir, c.Name, p.s.out())
		if err != nil {
			return err
		}
		defer unlock()
		if w := p.want(c); !p.kept(ctx, w) && !p.reused(ctx, w) {
			wants = append(wants, w)
		}
	}
	for _, src := range p.sources {
		if len(wants) == 0 {
			return nil
		}
		var err error
		if wants, err = src.Provide(ctx, p.kube, p.dir, wants); err != nil {
			return err
		}
	}
	if len(wants) == 0 {
		return nil
	}
	var missing []string
	for _, w := range wants {
		missing = append(missing, fmt.Sprintf("%s (%s)", w.Name, w.Why))
	}
	return fmt.Errorf("no source provides %s for Kubernetes %s", strings.Join(missing, ", "), p.kube)
}

// want is c as dir wants it: a Kubernetes component at the version of dir,
// etcd at the version the lockfile pins for it, or at none in particular.
func (p *provision) want(c Component) Want {
	w := Want{Component: c, Version: p.kube, Why: whyNotDownloaded(p.mode, c)}
	if c.IsEtcd() {
		w.Version = versions.Version{}
		if e, ok := p.lock.Lookup(p.kube); ok {
			w.Version = e.Etcd
		}
	}
	return w
}

// kept reports whether dir holds w already: at its version, stamped; one a
// source vouches for (Keeper); or, for an etcd no lockfile pins, any etcd
// that works (one built inside a project with the pinned etcd, say).
func (p *provision) kept(ctx context.Context, w Want) bool {
	bin := filepath.Join(p.dir, w.Name)
	if w.Version.IsZero() {
		if got, err := component.BinaryVersion(ctx, bin, w.Component); err == nil {
			fmt.Fprintf(p.s.out(), "%s %s: kept in %s (no %s pins one for Kubernetes %s)\n", w.Name, got, p.dir, versions.LockfileName, p.kube)
			return true
		}
	} else if component.UpToDate(ctx, bin, w.Component, w.Version) {
		fmt.Fprintf(p.s.out(), "%s %s: up to date in %s\n", w.Name, w.Version, p.dir)
		return true
	}
	if got, ok := p.keeps(ctx, w.Component, bin); ok {
		o, _ := store.ReadOrigin(p.dir, w.Name)
		fmt.Fprintf(p.s.out(), "%s %s: up to date in %s (%s with Kubernetes %s)\n", w.Name, got, p.dir, o.How, p.kube)
		return true
	}
	return false
}

// keeps asks the sources that vouch for what they provided whether bin is
// one of theirs (Keeper).
func (p *provision) keeps(ctx context.Context, c Component, bin string) (string, bool) {
	for _, src := range p.sources {
		if k, ok := src.(Keeper); ok {
			if got, ok := k.Keeps(ctx, p.kube, c, bin); ok {
				return got, true
			}
		}
	}
	return "", false
}

// reused links w into dir from the Reuse store when the Reuse store's is
// up to date as kept says, and nobody but the caller and root could have
// put it there; it reports whether it did. A binary the Reuse store must
// not be trusted with, or that cannot be linked, is said, and provided
// otherwise.
func (p *provision) reused(ctx context.Context, w Want) bool {
	if p.s.Reuse == "" {
		return false
	}
	src := filepath.Join(p.s.Reuse, "k8s", filepath.Base(p.dir), w.Name)
	if src == filepath.Join(p.dir, w.Name) {
		return false
	}
	if _, err := os.Stat(src); err != nil {
		return false
	}
	if err := (store.Store{Dir: p.s.Reuse}).Check(filepath.Dir(src), w.Name); err != nil {
		fmt.Fprintf(p.s.out(), "%s: not reusing %s (%v); providing it otherwise\n", w.Name, src, err)
		return false
	}
	label, current := w.Version.String(), false
	if w.Version.IsZero() {
		got, err := component.BinaryVersion(ctx, src, w.Component)
		label, current = got, err == nil
	} else {
		current = component.UpToDate(ctx, src, w.Component, w.Version)
	}
	if !current {
		label, current = p.keeps(ctx, w.Component, src)
	}
	if !current {
		return false
	}
	if err := store.Link(src, filepath.Join(p.dir, w.Name)); err != nil {
		fmt.Fprintf(p.s.out(), "%s %s: cannot reuse %s (%v); providing it otherwise\n", w.Name, label, src, err)
		return false
	}
	fmt.Fprintf(p.s.out(), "%s %s: reused %s\n", w.Name, label, src)
	return true
}

// beside provides kube-apiserver-test, a binary that only makes
// kube-apiserver start faster, beside a kube-apiserver built from source;
// a failure is said and leaves dir without it, which its users take for
// "run the one beside". Beside a downloaded kube-apiserver it is not
// built: building it compiles kube-apiserver, the minutes the download
// saved. Its main is written against one Kubernetes minor's API and does
// not compile against every other.
func (p *provision) beside(ctx context.Context) {
	c := KubeAPIServerTest
	if o, ok := store.ReadOrigin(p.dir, KubeAPIServer.Name); ok && o.How == store.OriginDownloaded {
		fmt.Fprintf(p.s.out(), "%s %s: not built beside a downloaded kube-apiserver; control planes run kube-apiserver\n", c.Name, p.kube)
		return
	}
	if err := p.provide(ctx, []Component{c}); err != nil {
		fmt.Fprintf(p.s.out(), "%s %s: not built, control planes run kube-apiserver: %v\n", c.Name, p.kube, err)
	}
}

// explain says, of a download that download mode could not do, what to
// do instead.
func (p *provision) explain(err error) error {
	var de *envtestarchive.DownloadError
	if p.mode == ModeDownload && errors.As(err, &de) {
		return fmt.Errorf("%s for Kubernetes %s: %s=download, and the download failed: %v (set %s=auto to build from the Go module proxy instead)",
			de.Component, de.Kube, ModeEnv, de.Err, ModeEnv)
	}
	return err
}
