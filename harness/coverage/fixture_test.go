package coverage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// The tests share one fixture, built once: testdata/calc as a module in a
// git repository, its worker and suite built with coverage, and a record
// of one run of the suite.
var (
	fixtureRoot string
	fixtureOnce sync.Once
	fixtureVal  *fixture
	fixtureErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		_ = os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// fixture is testdata/calc recorded.
type fixture struct {
	// repo is the repository the record was made in; base its commit.
	repo, base string
	// bin holds the worker and the suite's test binary.
	bin string
	// record is the record's directory.
	record string
	// dryRun is the suite's dry run.
	dryRun []types.Report
}

// calcFixture builds the fixture once, or skips the test where the go
// command or git is missing.
func calcFixture(t *testing.T) *fixture {
	t.Helper()
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	fixtureOnce.Do(func() { fixtureVal, fixtureErr = buildFixture() })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureVal
}

func buildFixture() (*fixture, error) {
	root, err := os.MkdirTemp("", "coverage-fixture-")
	if err != nil {
		return nil, err
	}
	fixtureRoot = root
	f := &fixture{repo: filepath.Join(root, "repo"), bin: filepath.Join(root, "bin"), record: filepath.Join(root, "record")}
	if err := os.CopyFS(f.repo, os.DirFS("testdata/calc")); err != nil {
		return nil, err
	}
	harness, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	// The module requires what the harness module does, so that it
	// builds from the module cache alone.
	hmod, err := os.ReadFile(filepath.Join(harness, "go.mod"))
	if err != nil {
		return nil, err
	}
	_, rest, _ := strings.Cut(string(hmod), "\ngo ")
	mod := "module example.com/calc\n\ngo " + rest + "\nrequire github.com/kubeharness/kubeharness/harness v0.0.0\n\nreplace github.com/kubeharness/kubeharness/harness => " + harness + "\n"
	if err := os.WriteFile(filepath.Join(f.repo, "go.mod"), []byte(mod), 0o644); err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(harness, "go.sum"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(f.repo, "go.sum"), sum, 0o644); err != nil {
		return nil, err
	}
	if _, err := run(f.repo, nil, "git", "init", "-q"); err != nil {
		return nil, err
	}
	if err := commitAll(f.repo, "calc"); err != nil {
		return nil, err
	}
	out, err := run(f.repo, nil, "git", "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	f.base = strings.TrimSpace(out)

	cover := []string{"-cover", "-covermode=atomic", "-coverpkg=example.com/calc/..."}
	if _, err := run(f.repo, nil, "go", append(append([]string{"build"}, cover...), "-o", filepath.Join(f.bin, "worker"), "./worker")...); err != nil {
		return nil, err
	}
	if _, err := run(f.repo, nil, "go", append(append([]string{"test", "-c"}, cover...), "-o", filepath.Join(f.bin, "suite.test"), "./suite")...); err != nil {
		return nil, err
	}
	// The suite runs in its package's directory, as go test runs it.
	suiteDir := filepath.Join(f.repo, "suite")
	env := []string{"SPEC_COVERAGE=" + f.record, "WORKER=" + filepath.Join(f.bin, "worker"),
		EnvCoverDir + "=" + filepath.Join(f.record, "processes")}
	if _, err := run(suiteDir, env, filepath.Join(f.bin, "suite.test"), "-test.gocoverdir="+filepath.Join(f.record, OutsideDir)); err != nil {
		return nil, err
	}
	dry := filepath.Join(root, "dry-run.json")
	if _, err := run(suiteDir, nil, filepath.Join(f.bin, "suite.test"), "-ginkgo.dry-run", "-ginkgo.json-report="+dry); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(dry)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &f.dryRun); err != nil {
		return nil, err
	}
	if st, _ := run(f.repo, nil, "git", "status", "--porcelain"); st != "" {
		return nil, fmt.Errorf("building the fixture changed its repository:\n%s", st)
	}
	return f, nil
}

// run runs a command in dir with env added, and returns its output.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func commitAll(dir, msg string) error {
	if _, err := run(dir, nil, "git", "add", "-A"); err != nil {
		return err
	}
	_, err := run(dir, nil, "git", "commit", "-q", "--allow-empty", "-m", msg)
	return err
}

// clone is a clone of the fixture's repository for one test to change.
func (f *fixture) clone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := run(f.bin, nil, "git", "clone", "-q", f.repo, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// edit replaces old with new in the file, which must hold old once.
func edit(t *testing.T, repo, file, old, new string) {
	t.Helper()
	p := filepath.Join(repo, filepath.FromSlash(file))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), old); n != 1 {
		t.Fatalf("%s holds %q %d times, want once", file, old, n)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, repo, file, content string) {
	t.Helper()
	p := filepath.Join(repo, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitIn(t *testing.T, repo string, args ...string) {
	t.Helper()
	if _, err := run(repo, nil, "git", args...); err != nil {
		t.Fatal(err)
	}
}

// covFiles are the coverage data files below dir.
func covFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "cov") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
