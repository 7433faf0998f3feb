package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// versionTimeout bounds a binary's version run.
const versionTimeout = 30 * time.Second

var (
	// kubeVersionRE finds the version a k8s.io/kubernetes command reports:
	// "Kubernetes v1.37.1", "Client Version: v1.37.1", "v1.37.1".
	kubeVersionRE = regexp.MustCompile(`(?:^|\s)v([0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)`)
	// etcdVersionRE finds the version etcd reports: "etcd Version: 3.7.3".
	etcdVersionRE = regexp.MustCompile(`etcd Version: ([0-9]+\.[0-9]+\.[0-9]+\S*)`)
)

type checkKey struct {
	path, flag string
	size       int64
	modTime    time.Time
}

type checkResult struct {
	version string
	err     error
}

// checked remembers what a binary reported, so that a process checking the
// same unchanged file again (each control-plane start does) runs it once.
var checked = struct {
	sync.Mutex
	m map[checkKey]checkResult
}{m: map[checkKey]checkResult{}}

// BinaryVersion checks that path is a regular, non-empty, executable file
// that no one but its owner may write and that runs, and returns the
// version it reports (without "v"): the Kubernetes version for
// k8s.io/kubernetes commands, etcd's own for etcd.
func BinaryVersion(ctx context.Context, path string, c Component) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s is missing", c.Name)
	case err != nil:
		return "", fmt.Errorf("%s: %v", c.Name, err)
	case fi.IsDir():
		return "", fmt.Errorf("%s is a directory, not a binary", c.Name)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file (%s)", c.Name, fi.Mode().Type())
	case fi.Size() == 0:
		return "", fmt.Errorf("%s is an empty file", c.Name)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is not executable (mode %s)", c.Name, fi.Mode().Perm())
	case writableByOthers(fi) != "":
		return "", fmt.Errorf("%s (mode %s) is writable by %s, who could change what runs: run `chmod go-w %s`", path, fi.Mode(), writableByOthers(fi), path)
	}
	key := checkKey{path: path, flag: c.VersionFlag, size: fi.Size(), modTime: fi.ModTime()}
	checked.Lock()
	res, ok := checked.m[key]
	checked.Unlock()
	if ok {
		return res.version, res.err
	}
	v, err := runVersion(ctx, path, c)
	if ctx.Err() == nil {
		checked.Lock()
		checked.m[key] = checkResult{v, err}
		checked.Unlock()
	}
	return v, err
}

func runVersion(ctx context.Context, path string, c Component) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmdline := strings.TrimSpace(c.Name + " " + c.VersionFlag)
	out, err := exec.CommandContext(ctx, path, strings.Fields(c.VersionFlag)...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		if len(text) > 200 {
			text = text[:200] + "..."
		}
		return "", fmt.Errorf("`%s` fails (%v): %q", cmdline, err, text)
	}
	re := kubeVersionRE
	if c.Module == Etcd.Module {
		re = etcdVersionRE
	}
	m := re.FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("`%s` reports no version (it printed %q)", cmdline, firstLine(text))
	}
	v := m[1]
	if strings.HasPrefix(v, "0.0.0") {
		return "", fmt.Errorf("`%s` reports v%s, an unstamped build that breaks clients' version discovery: build it with its version stamped in, as `kubeharness bins` does", cmdline, v)
	}
	return v, nil
}

// CheckBinaries checks every component in dir with BinaryVersion, and that
// the Kubernetes components among them report the same release, which it
// returns (the zero Version when there is none). Before it runs any of
// them it refuses them by the one rule for every binary the harness runs
// (ownership.CheckRun): each, dir and every directory above it must belong
// to the caller or root and no one else may write them; whoever else could
// change what runs. $KUBEBUILDER_ASSETS included: a directory of a
// colleague's is refused too, however private.
func CheckBinaries(ctx context.Context, dir string, components ...Component) (versions.Version, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return versions.Version{}, fmt.Errorf("%s is not a directory", dir)
	}
	var paths []string
	for _, c := range components {
		if path := filepath.Join(dir, c.Name); fileExists(path) {
			paths = append(paths, path)
		}
	}
	untrusted := ownership.DirProblems(dir, dir)
	if len(paths) > 0 {
		untrusted = ownership.CheckRun(dir, paths...)
	}
	if err := ownership.Refuse("in "+dir, untrusted, "provide the binaries with `kubeharness bins use VERSION -p PATH`, PATH a directory only you can write"); err != nil {
		return versions.Version{}, err
	}
	reported := make([]string, len(components))
	errs := make([]error, len(components))
	var wg sync.WaitGroup
	for i, c := range components {
		wg.Go(func() {
			reported[i], errs[i] = BinaryVersion(ctx, filepath.Join(dir, c.Name), c)
		})
	}
	wg.Wait()
	var problems []string
	for _, err := range errs {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return versions.Version{}, fmt.Errorf("in %s: %s", dir, strings.Join(problems, "; "))
	}
	kube, from := "", ""
	for i, c := range components {
		if c.Module == Etcd.Module {
			continue
		}
		if kube == "" {
			kube, from = reported[i], c.Name
			continue
		}
		if reported[i] != kube {
			return versions.Version{}, fmt.Errorf("in %s: %s reports Kubernetes %s but %s reports %s; all must come from one version", dir, c.Name, reported[i], from, kube)
		}
	}
	if kube == "" {
		return versions.Version{}, nil
	}
	v, err := versions.Parse(kube)
	if err != nil {
		return versions.Version{}, fmt.Errorf("in %s: %s reports Kubernetes %s, not a release (major.minor.patch): kubeharness runs Kubernetes releases only", dir, from, kube)
	}
	return v, nil
}

// AssetsEnv is the environment variable that, when set, names the directory
// holding the binaries and wins over everything kubeharness provides. The
// directory and its binaries must pass the trust rule every binary the
// harness runs passes (CheckBinaries, Lookup).
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Find returns the directory holding etcd and kube-apiserver of Kubernetes
// v, as Lookup finds and checks them, with the store's directory of v
// below root's bin/ last: $KUBEBUILDER_ASSETS when set (whatever version
// it holds), and so on. The error says what is wrong and what to run.
// Locate is the entry point for what a user asked for; Find is for callers
// holding the Version it returned.
func Find(root string, v versions.Version) (string, error) {
	f, err := Lookup(context.Background(), Where{Store: filepath.Join(root, "bin"),
		Resolve: func(context.Context, versions.Selector) (versions.Version, error) { return v, nil }})
	if err != nil {
		return "", err
	}
	return oneDir(f)
}

// oneDir is the one directory f's binaries are in; a control plane runs
// its binaries from one.
func oneDir(f Found) (string, error) {
	if f.Dir == "" {
		var where []string
		for name, path := range f.Paths {
			where = append(where, name+" "+path)
		}
		slices.Sort(where)
		return "", fmt.Errorf("the control-plane binaries are in several directories (%s): put them in one", strings.Join(where, ", "))
	}
	return f.Dir, nil
}

// Locate finds and checks the binaries (components) for what sel asks for
// (Lookup), and returns their directory and the Kubernetes version they
// report: what $KUBEBUILDER_ASSETS (and the rest of Lookup's order) names
// wins, nothing is resolved then, but when sel names a version its
// binaries must report it (a minor, any of its patches); otherwise the
// store below root's bin/ for the version res resolves sel to, whose
// missing binaries' error says what provides them.
func Locate(ctx context.Context, res *versions.Resolver, root string, sel versions.Selector, components ...Component) (string, versions.Version, error) {
	asked := ""
	f, err := Lookup(ctx, Where{Components: components, Store: filepath.Join(root, "bin"), Version: sel,
		Resolve: func(ctx context.Context, sel versions.Selector) (versions.Version, error) {
			v, err := res.Resolve(ctx, sel)
			if err == nil {
				asked = sel.String()
				if !sel.Explicit() {
					asked = fmt.Sprintf("%s %s", versions.SourceDefault, v)
				}
			}
			return v, err
		}})
	if err != nil {
		if asked != "" {
			err = fmt.Errorf("%s: %w", asked, err)
		}
		return "", versions.Version{}, err
	}
	dir, err := oneDir(f)
	return dir, f.Version, err
}
