package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
