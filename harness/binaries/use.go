package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/kubeharness/kubeharness/harness/binaries/envtestarchive"
	"github.com/kubeharness/kubeharness/harness/binaries/gobuild"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Store is a store of control-plane binaries (binaries/store: a bin-dir
// laid out as setup-envtest lays out its own, <Dir>/k8s/<version>-<os>-<arch>/)
// and where the binaries it lacks come from: what `kubeharness bins use`
// works with.
type Store struct {
	// Root is the project whose versions.yaml pins its Kubernetes versions
	// (the default one, the etcd of each); empty means none.
	Root string
	// Dir is the bin-dir.
	Dir string
	// Out receives progress; nil means os.Stderr.
	Out io.Writer
	// Reuse is another bin-dir whose binaries of the same version, up to
	// date, are hard-linked (or copied) instead of provided again; empty
	// means none.
	Reuse string
	// Sources are where a missing binary comes from, asked in order; nil
	// means those Mode names (Sources), the Go module build with
	// BuildModules.
	Sources []Source
	// Mode picks the Sources when they are nil; empty means
	// $KUBEHARNESS_BINARIES, else ModeAuto.
	Mode Mode
	// BuildModules are build modules the project keeps, by the module
	// they build (gobuild.Source.Modules); nil means every build module is
	// generated in the store.
	BuildModules map[string]string

	// archive and build, when set, stand in for the Sources' envtest
	// archive and Go module build (tests).
	archive *envtestarchive.Source
	build   Source
}

// OpenStore is the store at dir: empty means bin/ of the project the
// working directory is in, when it pins its versions (the nearest directory
// above with versions.yaml and go.mod), else setup-envtest's default
// (DefaultStoreDir). Its Root is that project, if any; a store other than
// the project's bin/ reuses what bin/k8s holds (Reuse).
func OpenStore(dir string) (Store, error) {
	root, err := ProjectRoot()
	if err != nil {
		root = "" // outside such a project: no versions.yaml
	}
	if dir == "" {
		if root != "" {
			dir = filepath.Join(root, "bin")
		} else if dir, err = DefaultStoreDir(); err != nil {
			return Store{}, err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return Store{}, err
	}
	st := Store{Root: root, Dir: dir}
	if project := filepath.Join(root, "bin"); root != "" && project != dir {
		st.Reuse = project
	}
	return st, nil
}

func (s Store) out() io.Writer {
	if s.Out == nil {
		return os.Stderr
	}
	return s.Out
}

// lockfile is Root's versions.yaml, or an empty one without Root.
func (s Store) lockfile() (*versions.Lockfile, error) {
	if s.Root == "" {
		return &versions.Lockfile{}, nil
	}
	return versions.LoadLockfile(s.Root)
}

// sources are the Sources, or those of the Mode; mode is the Mode ("" when
// Sources are given and Mode is not).
func (s Store) sources() ([]Source, Mode, error) {
	if s.Sources != nil {
		return s.Sources, s.Mode, nil
	}
	mode, err := ParseMode(string(s.Mode))
	if s.Mode == "" {
		mode, err = ModeFromEnv()
	}
	if err != nil {
		return nil, "", err
	}
	archive := s.archive
	if archive == nil {
		archive = &envtestarchive.Source{Out: s.out()}
	}
	build := s.build
	if build == nil {
		build = &gobuild.Source{Store: store.Store{Dir: s.Dir}, Modules: s.BuildModules, Out: s.out()}
	}
	return Sources(mode, archive, build), mode, nil
}

// UseOptions are how Use finds binaries.
type UseOptions struct {
	// Components are the binaries wanted (EnvtestComponents when empty).
	Components []Component
	// InstalledOnly takes only what the store holds (setup-envtest's -i):
	// nothing is downloaded or built, and a request that names no version
	// means versions.yaml's default.
	InstalledOnly bool
	// UseEnv takes $KUBEBUILDER_ASSETS first when it holds the components
	// of the version asked for (setup-envtest's --use-env).
	UseEnv bool
	// EnvWins takes $KUBEBUILDER_ASSETS, when it is set, whatever else is
	// asked: nothing is provided, and its binaries must work and report
	// the version asked for, or Use fails (`kubeharness bins VERSION`).
	EnvWins bool
	// Resolver turns the request into a version; nil means NewResolver.
	Resolver *versions.Resolver
}

// ErrNeedsUnix is Store.Use's error on Windows, where the drop-in hands its
// start to controller-runtime's envtest and setup-envtest provides the
// binaries (named .exe there, which this store does not know).
var ErrNeedsUnix = errors.New("kubeharness bins provides the control-plane binaries on Linux and macOS: on Windows, where the drop-in starts controller-runtime's envtest, provide them with setup-envtest (go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use VERSION -p path)")

// Use returns the directory of binaries for the version req asks for, and
// that version: $KUBEBUILDER_ASSETS when EnvWins, or when UseEnv and it
// matches, else what the store holds, else (unless InstalledOnly) what it
// provides into the store from its Sources (Provide). `kubeharness bins
// VERSION` and `kubeharness bins use VERSION` are this, with other
// options.
func (s Store) Use(ctx context.Context, req versions.Selector, o UseOptions) (string, versions.Version, error) {
	if runtime.GOOS == "windows" {
		return "", versions.Version{}, ErrNeedsUnix
	}
	components := o.Components
	if len(components) == 0 {
		components = EnvtestComponents
	}
	if assets := os.Getenv(AssetsEnv); o.EnvWins && assets != "" {
		f, err := Lookup(ctx, Where{Components: components, Dir: assets, DirBy: AssetsEnv, Version: req, Check: true})
		if err != nil {
			return "", versions.Version{}, err
		}
		fmt.Fprintf(s.out(), "$%s is set: using the binaries in %s (Kubernetes %s), providing nothing\n", AssetsEnv, assets, f.Version)
		return assets, f.Version, nil
	}
	if assets := os.Getenv(AssetsEnv); o.UseEnv && assets != "" {
		f, err := Lookup(ctx, Where{Components: components, Dir: assets, DirBy: AssetsEnv, Check: true})
		switch {
		case err != nil:
			fmt.Fprintf(s.out(), "not using $%s: %v\n", AssetsEnv, err)
		case !req.Matches(f.Version):
			fmt.Fprintf(s.out(), "not using $%s: it holds Kubernetes %s, not %s\n", AssetsEnv, f.Version, req.Value())
		default:
			fmt.Fprintf(s.out(), "using $%s=%s (Kubernetes %s)\n", AssetsEnv, assets, f.Version)
			return assets, f.Version, nil
		}
	}
	if o.InstalledOnly {
		if !req.Explicit() && s.Root != "" {
			if lock, err := versions.LoadLockfile(s.Root); err == nil {
				req = versions.Exactly(lock.Default)
			}
		}
		in, err := FindInstalled(ctx, s.Dir, req, components...)
		if err != nil {
			return "", versions.Version{}, fmt.Errorf("-i (installed only): %v; drop -i to download or build it", err)
		}
		return in.Dir, in.Version, nil
	}
	if _, _, err := s.sources(); err != nil {
		return "", versions.Version{}, err
	}
	res := o.Resolver
	if res == nil {
		var err error
		if res, err = NewResolver(s.Root, s.out()); err != nil {
			return "", versions.Version{}, err
		}
	}
	version, err := res.Resolve(ctx, req)
	if err != nil {
		return "", versions.Version{}, err
	}
	dir, err := s.Provide(ctx, version, components...)
	if err != nil {
		return "", versions.Version{}, err
	}
	return dir, version, nil
}

// NewestMinors is how many minors a listing outside a project offers as
// available (List): the newest patch of each of the NewestMinors newest
// minors the Go module proxy lists. Inside a project that pins its
// versions, those of versions.yaml and the newest patch of each of their
// minors are.
const NewestMinors = 3

// Listed is one version of a store's listing.
type Listed struct {
	// Version is the Kubernetes patch; OS and Arch the platform.
	Version  versions.Version
	OS, Arch string
	// Installed is set for a version the store holds, in Dir, whose
	// binaries came as Origins says (DescribeOrigins); the others are
	// available: they can be provided.
	Installed bool
	Dir       string
	Origins   string
}

// ReleaseLister is a versions.Proxy that also lists the minors of the releases
// it has, newest first (goproxy.Client does).
type ReleaseLister interface {
	Releases(ctx context.Context) ([]versions.Selector, error)
}

// List lists what the store holds of the versions sel matches (all of them
// when it names none), newest first, and, unless installedOnly, the
// versions that can be provided for this platform, as res (nil:
// NewResolver) finds them: those of the minor sel names, else those
// versions.yaml pins and the newest patch of each of their minors, else
// (outside a project) the newest patch of each of the NewestMinors newest
// minors the proxy lists (a ReleaseLister's Releases).
func (s Store) List(ctx context.Context, sel versions.Selector, installedOnly bool, res *versions.Resolver) ([]Listed, error) {
	installed, err := store.Store{Dir: s.Dir}.List()
	if err != nil {
		return nil, err
	}
	var out []Listed
	have := map[versions.Version]bool{}
	for _, in := range installed {
		if !sel.Matches(in.Version) {
			continue
		}
		out = append(out, Listed{Version: in.Version, OS: in.OS, Arch: in.Arch, Installed: true, Dir: in.Dir, Origins: DescribeOrigins(in.Dir)})
		if in.Here() {
			have[in.Version] = true
		}
	}
	if installedOnly {
		return out, nil
	}
	if res == nil {
		if res, err = NewResolver(s.Root, io.Discard); err != nil {
			return nil, err
		}
	}
	var minors []versions.Selector
	if sel.Explicit() {
		minors = []versions.Selector{sel}
	} else if s.Root == "" {
		releases, ok := res.Proxy.(ReleaseLister)
		if !ok {
			releases = &goproxy.Client{}
		}
		all, err := releases.Releases(ctx)
		if err != nil {
			return nil, err
		}
		minors = all[:min(NewestMinors, len(all))]
	}
	for _, v := range res.BuildableOf(ctx, minors...) {
		if sel.Matches(v) && !have[v] {
			out = append(out, Listed{Version: v, OS: runtime.GOOS, Arch: runtime.GOARCH})
		}
	}
	return out, nil
}

// Remove removes the versions sel matches from the store (all of them, and
// the build modules kept in it, when it names none: setup-envtest's
// cleanup), and returns what it removed.
func (s Store) Remove(sel versions.Selector) ([]Installed, error) {
	return store.Store{Dir: s.Dir}.Remove(sel)
}
