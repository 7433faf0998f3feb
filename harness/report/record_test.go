package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/coverage"
)

var record = flag.Bool("record", false, "run testdata/suite with ginkgo and record its runs into testdata/runs/")

// Recorded runs of testdata/suite, with the paths of the machine that
// recorded them made neutral: the module root is recordedRoot, the run's
// directory recordedArtifacts.
const (
	recordedRoot      = "/src/kubeharness"
	recordedArtifacts = "/artifacts"
	runOne            = "testdata/runs/one"
	runRepeat         = "testdata/runs/repeat"
)

// TestRecordFixtures records the runs the other tests read, with -record:
//
//	go test ./harness/report -run TestRecordFixtures -record
//
// "one" is the suite in two processes, "repeat" the suite with
// FIXTURE_REPEAT set and ginkgo --repeat=1, whose second attempt fails.
func TestRecordFixtures(t *testing.T) {
	if !*record {
		t.Skip("records testdata/runs/ with -record")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []struct {
		dir  string
		env  []string
		args []string
	}{
		{dir: runOne, args: []string{"--procs=2"}},
		{dir: runRepeat, env: []string{"FIXTURE_REPEAT=1"}, args: []string{"--procs=2", "--repeat=1"}},
	} {
		tmp := t.TempDir()
		args := append([]string{"tool", "ginkgo", "--json-report=report.json", "--output-dir=" + tmp}, rec.args...)
		cmd := exec.Command("go", append(args, "./testdata/suite")...)
		cmd.Env = append(append(os.Environ(), "FIXTURE_ARTIFACTS="+tmp), rec.env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("Test Suite Failed")) {
			t.Fatalf("%s: the fixture suite must fail (one spec fails on purpose); err %v:\n%s", rec.dir, err, out)
		}
		if err := os.RemoveAll(rec.dir); err != nil {
			t.Fatal(err)
		}
		neutral := strings.NewReplacer(root, recordedRoot, tmp, recordedArtifacts)
		copyJSON(t, filepath.Join(tmp, JSONReportFile), filepath.Join(rec.dir, JSONReportFile), neutral)
		attempts, _ := filepath.Glob(filepath.Join(tmp, AttemptsDir, "*.json"))
		for _, a := range attempts {
			_, n, _ := attemptName(filepath.Base(a))
			copyJSON(t, a, filepath.Join(rec.dir, AttemptsDir, "recorded-"+strconv.Itoa(n)+".json"), neutral)
		}
		bundles := filepath.Join(tmp, "failures")
		err = filepath.WalkDir(bundles, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(tmp, path)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			dst := filepath.Join(rec.dir, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", rec.dir)
	}
}

// copyJSON copies a JSON file compacted, with neutral paths.
func copyJSON(t *testing.T, src, dst string, neutral *strings.Replacer) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	// Paths appear JSON-escaped only where they hold no special
	// characters, which holds for both.
	out := neutral.Replace(compact.String())
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte(out+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The coverage fixture: testdata/covsrc run once per spec of runs/one
// that ran, as the per-spec record harness/coverage keeps
// (spec-coverage/) and the run's merged profile (coverage/coverage.txt),
// which a test copies into a copy of runs/one.
const (
	coverageFixture = "testdata/coverage"
	covsrcModule    = "github.com/kubeharness/kubeharness/harness/report/testdata/covsrc"
)

// TestRecordCoverageFixture records testdata/coverage with -record:
//
//	go test ./harness/report -run TestRecordCoverageFixture -record
func TestRecordCoverageFixture(t *testing.T) {
	if !*record {
		t.Skip("records testdata/coverage with -record")
	}
	reports, err := ReadReports(filepath.Join(runOne, JSONReportFile))
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{"creates a widget": "create", "rejects a <b>huge</b> widget & says why": "reject",
		"settles a widget eventually": "settle", "lists widgets across namespaces": "list", "rotates the widgets' CA": "rotate"}
	mod := t.TempDir()
	src, err := os.ReadFile("testdata/covsrc/widgets.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "widgets.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module "+covsrcModule+"\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "widgets")
	build := exec.Command("go", "build", "-cover", "-covermode=atomic", "-o", bin, ".")
	build.Dir = mod
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture's program: %v\n%s", err, out)
	}
	if err := os.RemoveAll(coverageFixture); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(coverageFixture, SpecCoverageDir)
	var dirs []string
	for _, s := range reports[0].SpecReports {
		op, ok := ops[s.LeafNodeText]
		if !ok {
			continue
		}
		repoFile := strings.TrimPrefix(s.LeafNodeLocation.FileName, recordedRoot+"/")
		dir := filepath.Join(record, coverage.SpecsDir, coverage.SpecID(repoFile, s.LeafNodeLocation.LineNumber, s.FullText()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		run := exec.Command(bin, op)
		run.Env = append(os.Environ(), "GOCOVERDIR="+dir)
		if out, err := run.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", bin, op, err, out)
		}
		info, err := json.MarshalIndent(coverage.SpecInfo{Text: s.FullText(), File: s.LeafNodeLocation.FileName, RepoFile: repoFile,
			Line: s.LeafNodeLocation.LineNumber, Labels: s.Labels(), State: s.State.String(), Processes: true}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, coverage.SpecFile), append(info, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	profile := filepath.Join(coverageFixture, CoverageProfileFile)
	if err := os.MkdirAll(filepath.Dir(profile), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+strings.Join(dirs, ","), "-o="+profile).CombinedOutput(); err != nil {
		t.Fatalf("merging the fixture's profile: %v\n%s", err, out)
	}
	t.Logf("recorded %s", coverageFixture)
}
