package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

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
	// Version is the Kubernetes patch version ("1.37.1").
	Version string
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
		out = append(out, Installed{Version: m[1], OS: m[2], Arch: m[3], Dir: filepath.Join(binDir, "k8s", e.Name())})
	}
	sortInstalled(out)
	return out, nil
}

func sortInstalled(is []Installed) {
	sort.SliceStable(is, func(i, j int) bool { return semver.Compare("v"+is[i].Version, "v"+is[j].Version) > 0 })
}

// Matches reports whether version (a patch) is what a request's value asks
// for: the same patch, or any patch of the same minor. An empty value
// matches every version. It asks nobody.
func Matches(value, version string) (bool, error) {
	if strings.TrimSpace(value) == "" {
		return true, nil
	}
	s, _, err := parse(Request{Value: value})
	if err != nil {
		return false, err
	}
	return s.matches(version), nil
}

// FindInstalled returns the newest version directory of the store at
// binDir, for this platform, that req asks for and whose components all
// check out (CheckBinaries); it builds nothing and asks no proxy. An empty
// request takes the newest one installed.
func FindInstalled(ctx context.Context, binDir string, req Request, components ...Component) (Installed, error) {
	all, err := ListInstalled(binDir)
	if err != nil {
		return Installed{}, err
	}
	var problems []string
	for _, in := range all {
		if in.OS != runtime.GOOS || in.Arch != runtime.GOARCH {
			continue
		}
		ok, err := Matches(req.Value, in.Version)
		if err != nil {
			return Installed{}, fmt.Errorf("%s: %v", req, err)
		}
		if !ok {
			continue
		}
		got, err := CheckBinaries(ctx, in.Dir, components...)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if got != in.Version {
			problems = append(problems, fmt.Sprintf("%s holds Kubernetes %s", in.Dir, got))
			continue
		}
		return in, nil
	}
	what := "Kubernetes version"
	if req.Explicit() {
		what = "Kubernetes " + normalize(req.Value)
	}
	msg := fmt.Sprintf("no %s for %s/%s installed in %s", what, runtime.GOOS, runtime.GOARCH, filepath.Join(binDir, "k8s"))
	if len(problems) > 0 {
		msg += " that works (" + strings.Join(problems, "; ") + ")"
	}
	return Installed{}, errors.New(msg)
}
