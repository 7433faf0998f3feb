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
// them it refuses dir when anyone but its owner may write it or one of
// them: they could change what runs. (Who owns them is the caller's
// concern: a store's directories are checked by checkStore; a directory
// the user names, such as $KUBEBUILDER_ASSETS, may be anyone's the user
// trusts, root's or a colleague's, so long as only its owner may write it.)
func CheckBinaries(ctx context.Context, dir string, components ...Component) (versions.Version, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return versions.Version{}, fmt.Errorf("%s is not a directory", dir)
	}
	var tc trustCheck
	tc.look(dir, fi, false)
	tc.lookFiles(dir, componentNames(components), false)
	if err := tc.err("in "+dir, false); err != nil {
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
// directory and its binaries must be writable by their owner only
// (CheckBinaries); whose they are is the user's choice.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Find returns the directory holding etcd and kube-apiserver of Kubernetes
// v: $KUBEBUILDER_ASSETS when set, otherwise the build output below root.
// Either way the binaries are checked (CheckBinaries); the error says what
// is wrong and what to run. Locate is the entry point for what a user
// asked for; Find is for callers holding the Version it returned.
func Find(root string, v versions.Version) (string, error) {
	ctx := context.Background()
	if env := os.Getenv(AssetsEnv); env != "" {
		if _, err := CheckBinaries(ctx, env, DefaultComponents...); err != nil {
			return "", fmt.Errorf("$%s: %v; put working binaries there, or unset %s to use the ones kubeharness provides", AssetsEnv, err, AssetsEnv)
		}
		return env, nil
	}
	return checkBuilt(ctx, root, v, DefaultComponents, buildCommand(root, v, nil))
}

// checkBuilt returns bin/k8s/<v>-<os>-<arch>/ below root once its
// components check out and report v; its errors say to run build.
func checkBuilt(ctx context.Context, root string, v versions.Version, components []Component, build string) (string, error) {
	dir := Dir(root, v)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("the binaries of Kubernetes %s are not built yet (no %s): run `%s`", v, dir, build)
	}
	if err := checkStore(filepath.Join(root, "bin"), dir, componentNames(components)...); err != nil {
		return "", err
	}
	got, err := CheckBinaries(ctx, dir, components...)
	if err != nil {
		return "", fmt.Errorf("the Kubernetes %s build is not usable: %v; run `%s`", v, err, build)
	}
	if got != v {
		return "", fmt.Errorf("%s holds Kubernetes %s, not %s; run `%s` to rebuild it", dir, got, v, build)
	}
	return dir, nil
}

// Locate finds and checks the binaries (components) for what sel asks for,
// and returns their directory and the Kubernetes version they report:
//   - $KUBEBUILDER_ASSETS, when set, wins: nothing is built or asked of the
//     proxy, but when sel names a version its binaries must report it (a
//     minor, any of its patches);
//   - otherwise bin/k8s/<version>-<os>-<arch>/ below root for the version
//     res resolves sel to; the error of binaries not built yet says what
//     builds them.
func Locate(ctx context.Context, res *versions.Resolver, root string, sel versions.Selector, components ...Component) (string, versions.Version, error) {
	if assets := os.Getenv(AssetsEnv); assets != "" {
		got, err := CheckBinaries(ctx, assets, components...)
		if err != nil {
			return "", versions.Version{}, fmt.Errorf("$%s: %v; put working binaries there, or unset %s to use the ones kubeharness provides", AssetsEnv, err, AssetsEnv)
		}
		if !sel.Matches(got) {
			return "", versions.Version{}, fmt.Errorf("%s asks for Kubernetes %s, but $%s=%s holds %s (kube-apiserver --version): point %s at %s binaries, unset it to use the ones kubeharness provides, or %s to use these",
				sel, sel.Canonical(), AssetsEnv, assets, got, AssetsEnv, sel.Canonical(), sel.Drop())
		}
		return assets, got, nil
	}
	v, err := res.Resolve(ctx, sel)
	if err != nil {
		return "", versions.Version{}, err
	}
	asked := sel.String()
	if !sel.Explicit() {
		asked = fmt.Sprintf("%s %s", versions.SourceDefault, v)
	}
	dir, err := checkBuilt(ctx, root, v, components, buildCommand(root, v, components))
	if err != nil {
		return "", versions.Version{}, fmt.Errorf("%s: %w", asked, err)
	}
	return dir, v, nil
}

// buildCommand is the kubeharness command that provides components for v
// in Dir(root, v): `kubeharness bins use`, which works in any project and
// provides kubectl too, or, for the other node components, which only a
// kind node image needs and only `kubeharness bins --node` builds, that
// command, run inside the kubeharness repository.
func buildCommand(root string, v versions.Version, components []Component) string {
	kcm := ""
	for _, c := range components {
		if c.Name != Kubectl.Name && slices.ContainsFunc(NodeComponents, func(n Component) bool { return n.Name == c.Name }) {
			return fmt.Sprintf("kubeharness bins --node %s", v)
		}
		if c.Name == KubeControllerManager.Name {
			kcm = " --with-controller-manager"
		}
	}
	return fmt.Sprintf("kubeharness bins use %s%s --bin-dir %s", v, kcm, filepath.Join(root, "bin"))
}
