package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// A spec that failed in an earlier run of the same commit and passes now
// is flaky, with its rate over the runs; one that failed on another
// commit only shows its rate; a run without a commit marks none.
func TestHistoryMarksWhatFailedAndPassedOnOneCommit(t *testing.T) {
	base := t.TempDir()
	writeSummary := func(name, commit string, outcomes map[string]Outcome) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(dir, OutDir), 0o755); err != nil {
			t.Fatal(err)
		}
		s := Summary{Start: t0.Add(-time.Hour), Commit: commit}
		for n, o := range outcomes {
			s.Specs = append(s.Specs, SpecSummary{Suite: "widgets e2e", Name: "widgets " + n, Outcome: o})
		}
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		// A run directory: the summary below report/.
		if err := os.WriteFile(filepath.Join(dir, OutDir, SummaryFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	history := []string{
		writeSummary("1", "abc", map[string]Outcome{"a": Failed, "b": Passed}),
		writeSummary("2", "old", map[string]Outcome{"a": Passed, "b": Failed}),
		filepath.Join(base, "missing"),
	}
	dir := filepath.Join(base, "now")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := mkSuite(t, 1, mkSpec("a"), mkSpec("b"), mkSpec("c"))
	data, err := json.Marshal([]types.Report{r})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONReportFile), data, 0o644); err != nil {
		t.Fatal(err)
	}

	w, err := Write(dir, RenderOptions{Commit: "abc", History: history})
	if err != nil {
		t.Fatal(err)
	}
	bySpec := map[string]*Spec{}
	for _, s := range w.Run.Specs {
		bySpec[s.Name] = s
	}
	a, b, c := bySpec["widgets a"], bySpec["widgets b"], bySpec["widgets c"]
	if !a.Flaky || a.History == nil || !a.History.SameCommit || a.History.Runs != 3 || a.History.Failed != 1 || a.History.Rate() != 33 {
		t.Errorf("a failed on this commit before and passes now: flaky %v, history %+v; want flaky, 1 failed of 3 runs", a.Flaky, a.History)
	}
	if b.Flaky || b.History == nil || b.History.SameCommit || b.History.Failed != 1 {
		t.Errorf("b failed only on another commit: flaky %v, history %+v; want not flaky, 1 failed", b.Flaky, b.History)
	}
	if c.History != nil {
		t.Errorf("c is in no earlier run: history %+v", c.History)
	}
	if w.Run.Counts.Flaky != 1 || len(w.Run.Flakes) != 1 {
		t.Errorf("counts %+v, flakes %v; want the one flaky spec", w.Run.Counts, names(w.Run.Flakes))
	}
	if len(w.Run.Warnings) == 0 {
		t.Error("a history directory without a summary gave no warning")
	}
	page, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "failed 1/3 runs (33%)") || !strings.Contains(string(page), "and passed on this commit too") {
		t.Error("the page does not show a's rate over the runs")
	}

	// Without a commit, nothing is known to be the same code.
	w, err = Write(dir, RenderOptions{History: history[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if w.Run.Counts.Flaky != 0 {
		t.Errorf("a run without a commit marked %d specs flaky from history", w.Run.Counts.Flaky)
	}
}
