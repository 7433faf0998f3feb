package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// Dir is where the binaries of a version are kept below the repository root:
// bin/k8s/<version>-<os>-<arch>, the store StoreDir lays out with root's
// bin/ as its bin-dir.
func Dir(root string, v versions.Version) string {
	return StoreDir(filepath.Join(root, "bin"), v)
}

// StoreDir is where the binaries of a version are kept in a bin-dir, laid
// out as setup-envtest lays out its store: <binDir>/k8s/<version>-<os>-<arch>.
func StoreDir(binDir string, v versions.Version) string {
	return filepath.Join(binDir, "k8s", fmt.Sprintf("%s-%s-%s", v, runtime.GOOS, runtime.GOARCH))
}

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

// DefaultStoreDir is setup-envtest's default bin-dir, so that the binaries
// `kubeharness bins use` installs outside the repository land where
// setup-envtest's would:
//   - Linux and others: ${XDG_DATA_HOME:-~/.local/share}/kubebuilder-envtest
//   - macOS: ~/Library/Application Support/io.kubebuilder.envtest
//   - Windows: %LocalAppData%\kubebuilder-envtest
func DefaultStoreDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		base := os.Getenv("LocalAppData")
		if base == "" {
			return "", errors.New("%LocalAppData% is not set: name a --bin-dir")
		}
		return filepath.Join(base, "kubebuilder-envtest"), nil
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%v: name a --bin-dir", err)
		}
		return filepath.Join(home, "Library", "Application Support", "io.kubebuilder.envtest"), nil
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("neither $XDG_DATA_HOME nor a home directory (%v): name a --bin-dir", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "kubebuilder-envtest"), nil
}

// Installed is one version directory of a store.
type Installed struct {
	// Version is the Kubernetes patch version.
	Version versions.Version
	// OS and Arch are the platform the binaries are for.
	OS, Arch string
	// Dir is the directory: StoreDir(binDir, Version) for this platform.
	Dir string
}

var storeEntryRE = regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)-([a-z0-9]+)-([a-z0-9]+)$`)

// ListInstalled lists the version directories of the store at binDir,
// newest first; a store that does not exist yet holds none.
func ListInstalled(binDir string) ([]Installed, error) {
	entries, err := os.ReadDir(filepath.Join(binDir, "k8s"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Installed
	for _, e := range entries {
		m := storeEntryRE.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		v, err := versions.Parse(m[1])
		if err != nil {
			continue
		}
		out = append(out, Installed{Version: v, OS: m[2], Arch: m[3], Dir: filepath.Join(binDir, "k8s", e.Name())})
	}
	sortInstalled(out)
	return out, nil
}

func sortInstalled(is []Installed) {
	slices.SortStableFunc(is, func(a, b Installed) int { return b.Version.Compare(a.Version) })
}

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
