package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// Store is a bin-dir laid out as setup-envtest lays out its store.
type Store struct {
	// Dir is the bin-dir: the store's binaries are below Dir/k8s.
	Dir string
}

// VersionDir is where the binaries of Kubernetes v for this platform are
// kept: <Dir>/k8s/<version>-<os>-<arch>.
func (s Store) VersionDir(v versions.Version) string { return VersionDir(s.Dir, v) }

// VersionDir is where the binaries of Kubernetes v for this platform are
// kept in the store whose bin-dir is binDir.
func VersionDir(binDir string, v versions.Version) string {
	return filepath.Join(binDir, "k8s", fmt.Sprintf("%s-%s-%s", v, runtime.GOOS, runtime.GOARCH))
}

// SourceDir is the directory below the store where the build module name
// is kept (<Dir>/k8s/.src/name): what cleanup of every version removes.
func (s Store) SourceDir(name string) string {
	return filepath.Join(s.Dir, "k8s", ".src", name)
}

// DefaultDir is setup-envtest's default bin-dir, so that binaries
// provided outside a project land where setup-envtest's would:
//   - Linux and others: ${XDG_DATA_HOME:-~/.local/share}/kubebuilder-envtest
//   - macOS: ~/Library/Application Support/io.kubebuilder.envtest
//   - Windows: %LocalAppData%\kubebuilder-envtest
func DefaultDir() (string, error) {
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
	// Dir is the directory: VersionDir(Version) for its platform.
	Dir string
}

// Here reports whether the binaries are for this platform.
func (in Installed) Here() bool { return in.OS == runtime.GOOS && in.Arch == runtime.GOARCH }

var entryRE = regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)-([a-z0-9]+)-([a-z0-9]+)$`)

// List lists the version directories of the store, newest first; a store
// that does not exist yet holds none.
func (s Store) List() ([]Installed, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, "k8s"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Installed
	for _, e := range entries {
		m := entryRE.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		v, err := versions.Parse(m[1])
		if err != nil {
			continue
		}
		out = append(out, Installed{Version: v, OS: m[2], Arch: m[3], Dir: filepath.Join(s.Dir, "k8s", e.Name())})
	}
	slices.SortStableFunc(out, func(a, b Installed) int { return b.Version.Compare(a.Version) })
	return out, nil
}

// Remove removes the version directories sel matches (every platform's),
// and returns what it removed. A selector that names no version removes
// every version, and the build modules kept below the store (SourceDir)
// too: setup-envtest's cleanup.
func (s Store) Remove(sel versions.Selector) ([]Installed, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var removed []Installed
	for _, in := range all {
		if !sel.Matches(in.Version) {
			continue
		}
		if err := os.RemoveAll(in.Dir); err != nil {
			return removed, err
		}
		removed = append(removed, in)
	}
	if !sel.Explicit() {
		if err := os.RemoveAll(filepath.Join(s.Dir, "k8s", ".src")); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// Files lists the names of the files the store directory dir holds, but
// for its dot files (origin records, locks, partial downloads): the
// binaries, and what is written on the way to one.
func Files(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name()[0] != '.' {
			names = append(names, e.Name())
		}
	}
	return names
}
