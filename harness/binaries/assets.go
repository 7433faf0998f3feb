package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"
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
// that runs, and returns the version it reports (without "v"): the
// Kubernetes version for k8s.io/kubernetes commands, etcd's own for etcd.
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
// the Kubernetes components among them report the same version, which it
// returns ("" when there is none).
func CheckBinaries(ctx context.Context, dir string, components ...Component) (string, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	versions := make([]string, len(components))
	errs := make([]error, len(components))
	var wg sync.WaitGroup
	for i, c := range components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			versions[i], errs[i] = BinaryVersion(ctx, filepath.Join(dir, c.Name), c)
		}()
	}
	wg.Wait()
	var problems []string
	for _, err := range errs {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("in %s: %s", dir, strings.Join(problems, "; "))
	}
	kube, from := "", ""
	for i, c := range components {
		if c.Module == Etcd.Module {
			continue
		}
		if kube == "" {
			kube, from = versions[i], c.Name
			continue
		}
		if versions[i] != kube {
			return "", fmt.Errorf("in %s: %s reports Kubernetes %s but %s reports %s; all must come from one version", dir, c.Name, versions[i], from, kube)
		}
	}
	return kube, nil
}

// Locate finds and checks the binaries (components) for what req asks for,
// and returns their directory and the Kubernetes version they report:
//   - $KUBEBUILDER_ASSETS, when set, wins: nothing is built or asked of the
//     proxy, but when req names a version its binaries must report it (a
//     minor, any of its patches);
//   - otherwise bin/k8s/<version>-<os>-<arch>/ for the version Resolve makes
//     of req; the error of binaries not built yet says what builds them.
func (r *Resolver) Locate(ctx context.Context, root string, req Request, components ...Component) (dir, version string, err error) {
	if assets := os.Getenv(AssetsEnv); assets != "" {
		var want spec
		if req.Explicit() {
			var prerelease bool
			if want, prerelease, err = parse(req); err != nil {
				if prerelease {
					return "", "", err
				}
				return "", "", fmt.Errorf("%w%s", err, r.lockedHint(req))
			}
		}
		got, err := CheckBinaries(ctx, assets, components...)
		if err != nil {
			return "", "", fmt.Errorf("$%s: %v; put working binaries there, or unset %s to use the ones kubeharness builds", AssetsEnv, err, AssetsEnv)
		}
		if req.Explicit() && !want.matches(got) {
			return "", "", fmt.Errorf("%s asks for Kubernetes %s, but $%s=%s holds %s (kube-apiserver --version): point %s at %s binaries, unset it to use the ones kubeharness builds, or %s to use these",
				req, want.version, AssetsEnv, assets, got, AssetsEnv, want.version, req.drop())
		}
		return assets, got, nil
	}
	version, err = r.Resolve(ctx, req)
	if err != nil {
		return "", "", err
	}
	if !req.Explicit() {
		req = Request{Value: version, Source: SourceDefault}
	}
	dir = Dir(root, version)
	build := buildCommand(version, components)
	if _, err := os.Stat(dir); err != nil {
		return "", "", fmt.Errorf("%s: the binaries of Kubernetes %s are not built yet (no %s): run `%s`", req, version, dir, build)
	}
	got, err := CheckBinaries(ctx, dir, components...)
	if err != nil {
		return "", "", fmt.Errorf("%s: the Kubernetes %s build is not usable: %v; run `%s`", req, version, err, build)
	}
	if got != version {
		return "", "", fmt.Errorf("%s: %s holds Kubernetes %s, not %s; run `%s` to rebuild it", req, dir, got, version, build)
	}
	return dir, version, nil
}

// matches reports whether a binary's version is what s asks for.
func (s spec) matches(got string) bool {
	if s.minor {
		return semver.MajorMinor("v"+got) == "v"+s.version
	}
	return got == s.version
}

// buildCommand is what builds components for version.
func buildCommand(version string, components []Component) string {
	for _, c := range components {
		for _, n := range NodeComponents {
			if c.Name == n.Name {
				return fmt.Sprintf("bin/kubeharness bins --node %s", version)
			}
		}
	}
	return fmt.Sprintf("make envtest-bins %s=%s", VersionEnv, version)
}
