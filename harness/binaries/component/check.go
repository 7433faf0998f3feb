package component

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/clihint"
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
	case ownership.OthersMayWrite(fi) != "":
		return "", fmt.Errorf("%s (mode %s) is writable by %s, who could change what runs: run `chmod go-w %s`", path, fi.Mode(), ownership.OthersMayWrite(fi), path)
	}
	key := checkKey{path: path, flag: c.VersionFlag, size: fi.Size(), modTime: fi.ModTime()}
	checked.Lock()
	res, ok := checked.m[key]
	checked.Unlock()
	if ok {
		return res.version, res.err
	}
	v, err := RunVersion(ctx, path, c)
	if ctx.Err() == nil {
		checked.Lock()
		checked.m[key] = checkResult{v, err}
		checked.Unlock()
	}
	return v, err
}

// RunVersion runs the binary at path, c, for its version, as
// BinaryVersion does, without its checks of the file and without
// remembering: for a binary just written.
func RunVersion(ctx context.Context, path string, c Component) (string, error) {
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
	if c.IsEtcd() {
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
		if fi, err := os.Stat(filepath.Join(dir, c.Name)); err == nil && !fi.IsDir() {
			path := filepath.Join(dir, c.Name)
			paths = append(paths, path)
		}
	}
	untrusted := ownership.DirProblems(dir, dir)
	if len(paths) > 0 {
		untrusted = ownership.CheckRun(dir, paths...)
	}
	if err := ownership.Refuse("in "+dir, untrusted, "provide the binaries with `kubeharness bins use VERSION -p PATH`, PATH a directory only you can write; "+clihint.Get()); err != nil {
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
		if c.IsEtcd() {
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

// UpToDate reports whether bin is c at version with its commit stamped,
// and, for a component with a main of kubeharness's, built from that main
// as it is now.
func UpToDate(ctx context.Context, bin string, c Component, version versions.Version) bool {
	if ok, _ := ReportsVersion(ctx, bin, c, version); !ok {
		return false
	}
	if c.main != nil {
		if info, err := buildinfo.ReadFile(bin); err != nil || info.Path != c.MainModulePath() {
			return false
		}
	}
	_, ok := StampedCommit(ctx, bin, c)
	return ok
}

// ReportsVersion runs the binary's version flag and checks that it names
// version; got is what it printed.
func ReportsVersion(ctx context.Context, bin string, c Component, version versions.Version) (ok bool, got string) {
	if _, err := os.Stat(bin); err != nil {
		return false, ""
	}
	out, err := exec.CommandContext(ctx, bin, strings.Fields(c.VersionFlag)...).CombinedOutput()
	got = strings.TrimSpace(string(out))
	if err != nil {
		return false, got
	}
	want := "v" + version.String()
	if c.IsEtcd() {
		want = "etcd Version: " + version.String()
	}
	return strings.Contains(got, want+"\n") || strings.HasSuffix(got, want), got
}

// commitPlaceholder is what k8s.io/component-base/version.gitCommit says
// in a build that did not stamp it.
const commitPlaceholder = "$Format:%H$"

// gitCommitRE finds the commit in `--version=raw` (GitCommit:"…") and in
// `version -o json` ("gitCommit": "…") output.
var gitCommitRE = regexp.MustCompile(`(?i)"?gitCommit"?\s*:\s*"([^"]*)"`)

// StampedCommit returns the git commit a binary reports; ok is false when
// the binary cannot say, or still carries the unstamped placeholder (a
// build from before commits were stamped, to be built again).
func StampedCommit(ctx context.Context, bin string, c Component) (commit string, ok bool) {
	if c.infoFlag == "" {
		return "", true
	}
	out, err := exec.CommandContext(ctx, bin, strings.Fields(c.infoFlag)...).CombinedOutput()
	if err != nil {
		return "", false
	}
	m := gitCommitRE.FindSubmatch(out)
	if m == nil || string(m[1]) == commitPlaceholder {
		return "", false
	}
	return string(m[1]), true
}

// firstLine is s up to its first newline, for output quoted in a one-line
// message.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
