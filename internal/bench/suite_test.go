package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// TestBenchSuiteTimesTheFastTier: the suite section runs the command
// serially, then the fast tier with its label filter, then the parallel
// runs with none, and prints the fast tier's wall time beside the whole
// suite's.
func TestBenchSuiteTimesTheFastTier(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs")
	t.Setenv("LABEL_FILTER", "inherited")
	cmd := `echo "$BENCH_RUN $PROCS [$LABEL_FILTER]" >>` + log
	var out bytes.Buffer
	if err := benchSuite(context.Background(), &out, suiteRuns{cmd: cmd, procs: 2, runs: 2, fastFilter: "!slow"}); err != nil {
		t.Fatal(err)
	}
	runs, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "serial 1 []\nfast 2 [!slow]\n1 2 []\n2 2 []\n"; string(runs) != want {
		t.Errorf("runs:\n%s\nwant:\n%s", runs, want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^suite: fast \d+\.\d\ds all \d+\.\d\ds$`).MatchString(lines[1]) ||
		!strings.HasPrefix(lines[0], "suite: serial ") || lines[2] != "parallel suite runs: 2, failed 0" {
		t.Errorf("printed:\n%s", out.String())
	}
	// The whole suite's time is the first parallel run's, on both lines.
	parallel := regexp.MustCompile(`parallel (\S+) `).FindStringSubmatch(lines[0])
	if parallel == nil || !strings.HasSuffix(lines[1], " all "+parallel[1]) {
		t.Errorf("the fast tier's line does not show the first parallel run's time:\n%s", out.String())
	}
}

// Without a fast filter there is no fast run and no line of it; a failed
// fast tier fails the section.
func TestBenchSuiteWithoutOrWithAFailingFastTier(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs")
	var out bytes.Buffer
	if err := benchSuite(context.Background(), &out, suiteRuns{cmd: `echo "$BENCH_RUN" >>` + log, procs: 2, runs: 1}); err != nil {
		t.Fatal(err)
	}
	if runs, _ := os.ReadFile(log); string(runs) != "serial\n1\n" || strings.Contains(out.String(), "fast") {
		t.Errorf("without a fast filter: runs %q, printed %q", runs, out.String())
	}
	err := benchSuite(context.Background(), &out, suiteRuns{cmd: `[ "$BENCH_RUN" != fast ]`, procs: 2, runs: 1, fastFilter: "!slow"})
	if err == nil || !strings.Contains(err.Error(), "fast tier (label filter !slow) failed") {
		t.Errorf("a failing fast tier: %v", err)
	}
}

// setupAndTeardown adds up the BeforeSuite and AfterSuite nodes of every
// suite in a Ginkgo JSON report, synchronized or not, and nothing else.
func TestSetupAndTeardownAddsTheSuiteNodes(t *testing.T) {
	reports := []types.Report{
		{SpecReports: types.SpecReports{
			{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, RunTime: 2 * time.Second},
			{LeafNodeType: types.NodeTypeIt, RunTime: 7 * time.Second},
			{LeafNodeType: types.NodeTypeSynchronizedAfterSuite, RunTime: 300 * time.Millisecond},
		}},
		{SpecReports: types.SpecReports{
			{LeafNodeType: types.NodeTypeBeforeSuite, RunTime: time.Second},
			{LeafNodeType: types.NodeTypeReportAfterSuite, RunTime: 5 * time.Second},
			{LeafNodeType: types.NodeTypeAfterSuite, RunTime: 200 * time.Millisecond},
		}},
	}
	data, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := setupAndTeardown(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3500 * time.Millisecond; got != want {
		t.Errorf("setupAndTeardown = %s, want %s", got, want)
	}

	if err := os.WriteFile(path, []byte(`[{"SpecReports":[]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := setupAndTeardown(path); err == nil || !strings.Contains(err.Error(), "no BeforeSuite or AfterSuite") {
		t.Errorf("a report without suite nodes: %v; want an error that says so", err)
	}
}

func TestReadInstallsReadsEachStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.jsonl")
	lines := `{"controlPlaneSeconds":0.9,"installSeconds":0.061,"totalSeconds":1.0,"crds":1}` + "\n" +
		`{"controlPlaneSeconds":0.8,"installSeconds":0.25,"totalSeconds":1.1,"crds":2}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readInstalls(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{61 * time.Millisecond, 250 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("readInstalls = %v, want %v", got, want)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readInstalls(path); err == nil {
		t.Error("an empty file: no error; want one that says no start was recorded")
	}
}
