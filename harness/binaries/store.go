package binaries

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Dir is where the binaries of a version are kept below a project's root:
// bin/k8s/<version>-<os>-<arch>, the store StoreDir lays out with root's
// bin/ as its bin-dir.
func Dir(root string, v versions.Version) string {
	return StoreDir(filepath.Join(root, "bin"), v)
}

// StoreDir is where the binaries of a version are kept in a bin-dir, laid
// out as setup-envtest lays out its store: <binDir>/k8s/<version>-<os>-<arch>
// (store.VersionDir).
func StoreDir(binDir string, v versions.Version) string { return store.VersionDir(binDir, v) }

// ProjectRoot walks up from the working directory to the project that
// pins its Kubernetes versions: the nearest directory holding versions.yaml
// and go.mod.
func ProjectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, versions.LockfileName)); err == nil {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s above %s", versions.LockfileName, dir)
		}
	}
}

// DefaultStoreDir is setup-envtest's default bin-dir (store.DefaultDir).
func DefaultStoreDir() (string, error) { return store.DefaultDir() }

// Installed is one version directory of a store.
type Installed = store.Installed

// ListInstalled lists the version directories of the store at binDir,
// newest first; a store that does not exist yet holds none.
func ListInstalled(binDir string) ([]Installed, error) { return store.Store{Dir: binDir}.List() }

// FindInstalled returns the newest version directory of the store at
// binDir, for this platform, that sel asks for and whose components all
// check out (CheckBinaries); it builds nothing and asks no proxy. A
// selector that names no version takes the newest one installed. It is
// Lookup of the store alone: what others could have changed is refused
// before anything in it runs.
func FindInstalled(ctx context.Context, binDir string, sel versions.Selector, components ...Component) (Installed, error) {
	f, err := Lookup(ctx, Where{Components: components, Store: binDir, StoreOnly: true, Version: sel, Check: true})
	if err != nil {
		return Installed{}, err
	}
	return Installed{Version: f.Version, OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: f.Dir}, nil
}
