package binaries

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// Store is a bin-dir laid out as setup-envtest lays out its store
// (<Dir>/k8s/<version>-<os>-<arch>/), and what `kubeharness bins use` does
// with it.
type Store struct {
	// Root is the kubeharness repository (versions.yaml, hack/'s build
	// modules); empty outside it.
	Root string
	// Dir is the bin-dir.
	Dir string
	// Out receives progress; nil means os.Stderr.
	Out io.Writer
}

// OpenStore is the store at dir: empty means bin/ of the project the
// working directory is in, when it pins its versions (the nearest directory
// above with versions.yaml and go.mod), else setup-envtest's default
// (DefaultStoreDir).
func OpenStore(dir string) (Store, error) {
	root, err := ProjectRoot()
	if err != nil {
		root = "" // outside such a project: no versions.yaml, no hack/ modules
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
	return Store{Root: root, Dir: dir}, nil
}

func (s Store) out() io.Writer {
	if s.Out == nil {
		return os.Stderr
	}
	return s.Out
}

// Builder builds into the store, reusing what the repository's own store
// (bin/k8s) holds of the same version when the store is another one.
func (s Store) Builder() *Builder {
	b := &Builder{Root: s.Root, Store: s.Dir, Out: s.out()}
	if s.Root != "" {
		if repo := filepath.Join(s.Root, "bin"); repo != s.Dir {
			b.Reuse = repo
		}
	}
	return b
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
	// Resolver turns the request into a version; nil means NewResolver.
	Resolver *versions.Resolver
}

// Use returns the directory of binaries for the version req asks for, and
// that version: $KUBEBUILDER_ASSETS when UseEnv and it matches, else what
// the store holds, else (unless InstalledOnly) what it downloads or builds
// into the store (Builder, KUBEHARNESS_BINARIES).
func (s Store) Use(ctx context.Context, req versions.Selector, o UseOptions) (string, versions.Version, error) {
	components := o.Components
	if len(components) == 0 {
		components = EnvtestComponents
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
	if _, err := ModeFromEnv(); err != nil {
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
	dir, err := s.Builder().Build(ctx, version, components...)
	if err != nil {
		return "", versions.Version{}, err
	}
	return dir, version, nil
}
