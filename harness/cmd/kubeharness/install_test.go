package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// module is the harness module, whose tag (harness/vX.Y.Z) go install and
// go get -tool resolve.
const module = "github.com/kubeharness/kubeharness/harness"

// TestInstallFromATaggedCopy: what an adopter does works from a tag and
// without a network. This checkout's files are committed to a local git
// repository and tagged harness/<version>; git's url.<dir>.insteadOf makes
// it github.com/kubeharness/kubeharness, GOPRIVATE makes Go fetch it
// directly, and GOPROXY=off keeps everything else to the module cache.
// Then `go install <path>@<version>` gives a kubeharness that answers
// bins list and shard --help and names that version; and `go get -tool`
// in an operator's module on controller-runtime v0.23.0, the harness's own
// requirements and so the oldest a project can be on, changes none of its
// controller-runtime, k8s.io, Ginkgo and Gomega versions, and `go tool
// kubeharness shard --help` answers.
func TestInstallFromATaggedCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubeharness from a tagged copy of the repository")
	}
	if runtime.GOOS == "windows" {
		t.Skip("git's insteadOf with a local path: tested on Linux and macOS")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git: go install cannot fetch from a repository")
	}
	work := t.TempDir()
	// Every run tags a version of its own: the module cache keeps what it
	// downloaded for a version for ever, so a version used before would be
	// the code of that run, not this one's. Cleanup removes it again.
	version := fmt.Sprintf("v0.99.0-install.%d", time.Now().UnixNano())
	env := taggedCopy(t, git, work, version)
	cleanModuleCache(t, version)

	gobin := filepath.Join(work, "gobin")
	goCmd(t, work, append(env, "GOBIN="+gobin), "install", module+"/cmd/kubeharness@"+version)
	kubeharness := filepath.Join(gobin, "kubeharness")
	store := filepath.Join(work, "store")
	if out := run(t, work, env, kubeharness, "bins", "list", "-i", "--bin-dir", store); strings.TrimSpace(out) != "" {
		t.Errorf("bins list -i on an empty store printed %q, want nothing", out)
	}
	if out := run(t, work, env, kubeharness, "shard", "--help"); !strings.Contains(out, "Usage:\n  kubeharness shard --dry-run REPORT --shard K/N") {
		t.Errorf("shard --help printed\n%s", out)
	}
	if out := run(t, work, env, kubeharness, "version"); !strings.Contains(out, "kubeharness: "+version+"\n") {
		t.Errorf("version printed\n%s\nwant %s, the tag it was installed at", out, version)
	}

	operator := filepath.Join(work, "operator")
	writeFiles(t, operator, map[string]string{
		"go.mod": `module example.com/operator

go 1.25.0

require (
	github.com/onsi/ginkgo/v2 v2.27.2
	github.com/onsi/gomega v1.38.2
	k8s.io/client-go v0.35.0
	sigs.k8s.io/controller-runtime v0.23.0
)
`,
		"suite_test.go": `package operator

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	testEnv *envtest.Environment
	cfg     *rest.Config
)

func TestOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "operator")
}
`,
	})
	goCmd(t, operator, env, "mod", "tidy")
	before := pinned(t, operator, env)
	goCmd(t, operator, env, "get", "-tool", module+"/cmd/kubeharness@"+version)
	if after := pinned(t, operator, env); after != before {
		t.Errorf("go get -tool changed the operator's versions:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if out := goCmd(t, operator, env, "tool", "kubeharness", "shard", "--help"); !strings.Contains(out, "Usage:\n  kubeharness shard") {
		t.Errorf("go tool kubeharness shard --help printed\n%s", out)
	}
	if mod, err := os.ReadFile(filepath.Join(operator, "go.mod")); err != nil || !strings.Contains(string(mod), "tool "+module+"/cmd/kubeharness") {
		t.Errorf("go.mod has no tool directive for kubeharness (%v):\n%s", err, mod)
	}
}

// taggedCopy commits this checkout's files (tracked and untracked, not
// ignored) to a new git repository in work/src, tags it harness/<version>,
// and returns the environment that makes Go fetch
// github.com/kubeharness/kubeharness from it and nothing from a network.
func taggedCopy(t *testing.T, git, work, version string) []string {
	t.Helper()
	top := strings.TrimSpace(run(t, ".", nil, git, "rev-parse", "--show-toplevel"))
	files := strings.Split(strings.TrimRight(run(t, top, nil, git, "ls-files", "-z", "-co", "--exclude-standard"), "\x00"), "\x00")
	src := filepath.Join(work, "src")
	for _, f := range files {
		from := filepath.Join(top, f)
		fi, err := os.Lstat(from)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or a link
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	gitEnv := []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com"}
	run(t, src, gitEnv, git, "init", "-q")
	run(t, src, gitEnv, git, "add", "-A")
	run(t, src, gitEnv, git, "commit", "-q", "-m", "a copy to install from")
	run(t, src, gitEnv, git, "tag", "harness/"+version)

	gitconfig := filepath.Join(work, "gitconfig")
	if err := os.WriteFile(gitconfig, fmt.Appendf(nil, "[url %q]\n\tinsteadOf = https://github.com/kubeharness/kubeharness\n", src), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"GIT_CONFIG_GLOBAL=" + gitconfig,
		"GIT_CONFIG_NOSYSTEM=1",
		"GOPRIVATE=github.com/kubeharness",
		"GOPROXY=off",
		// The checksum database is on the network too; what the module
		// cache holds was checked when it was downloaded.
		"GOSUMDB=off",
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	}
}

// cleanModuleCache removes what Go downloaded for version of the harness
// module once the test ends: a version no one else uses.
func cleanModuleCache(t *testing.T, version string) {
	t.Helper()
	modcache := strings.TrimSpace(run(t, ".", nil, "go", "env", "GOMODCACHE"))
	t.Cleanup(func() {
		dirs := []string{filepath.Join(modcache, filepath.FromSlash(module)+"@"+version)}
		downloads, _ := filepath.Glob(filepath.Join(modcache, "cache", "download", filepath.FromSlash(module), "@v", version+".*"))
		// The list of the versions downloaded, which names this one.
		downloads = append(downloads, filepath.Join(modcache, "cache", "download", filepath.FromSlash(module), "@v", "list"))
		for _, d := range dirs {
			// The module cache makes its files read-only.
			_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					_ = os.Chmod(p, 0o755)
				}
				return nil
			})
			if err := os.RemoveAll(d); err != nil {
				t.Errorf("removing %s from the module cache: %v", d, err)
			}
		}
		for _, f := range downloads {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				t.Errorf("removing %s from the module cache: %v", f, err)
			}
		}
	})
}

// pinned is what an adopter keeps: the versions of controller-runtime,
// every k8s.io module, Ginkgo and Gomega in dir's build list.
func pinned(t *testing.T, dir string, env []string) string {
	t.Helper()
	var keep []string
	for _, line := range strings.Split(goCmd(t, dir, env, "list", "-m", "-f", "{{.Path}} {{.Version}}", "all"), "\n") {
		path, _, _ := strings.Cut(line, " ")
		if path == "sigs.k8s.io/controller-runtime" || strings.HasPrefix(path, "k8s.io/") ||
			path == "github.com/onsi/ginkgo/v2" || path == "github.com/onsi/gomega" {
			keep = append(keep, line)
		}
	}
	if len(keep) < 4 {
		t.Fatalf("go list -m all in %s lists %q: not an operator's module", dir, keep)
	}
	return strings.Join(keep, "\n")
}

// goCmd runs the go command in dir with env added, and returns its output.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	return run(t, dir, env, "go", args...)
}

// run runs name with args in dir, env added to this process's, and returns
// its standard output; it fails the test, with everything printed, when
// the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s%s", name, strings.Join(args, " "), dir, err, out, stderr.String())
	}
	return string(out)
}

// writeFiles writes files (name: content) below dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
