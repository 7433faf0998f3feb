package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// SpecHistory is how a spec fared over the runs of RenderOptions.History
// and this one.
type SpecHistory struct {
	// Runs and Failed count the runs that ran the spec and those in which
	// it failed, this run included.
	Runs, Failed int
	// SameCommit is true when the spec both passed and failed on this
	// run's commit: nothing in the code changed, so the spec, or what it
	// tests, is flaky.
	SameCommit bool
}

// Rate is the share of runs in which the spec failed, in percent.
func (h SpecHistory) Rate() int {
	if h.Runs == 0 {
		return 0
	}
	return h.Failed * 100 / h.Runs
}

// readHistory reads the summaries of the runs in dirs: each a report's
// directory (summary.json in it) or a run's directory (report/summary.json).
func readHistory(dirs []string) ([]Summary, []string) {
	var out []Summary
	var warnings []string
	for _, dir := range dirs {
		var s Summary
		var err error
		for _, path := range []string{filepath.Join(dir, SummaryFile), filepath.Join(dir, OutDir, SummaryFile)} {
			if s, err = ReadSummary(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the run in %s is left out of the history: %v", dir, err))
			continue
		}
		out = append(out, s)
	}
	return out, warnings
}

// applyHistory sets each spec's History from the summaries of earlier
// runs, and marks flaky a spec that both passed and failed on this run's
// commit (which a run cannot know when it records no commit).
func applyHistory(run *Run, history []Summary) {
	if len(history) == 0 {
		return
	}
	type tally struct{ runs, failed, passedHere, failedHere int }
	seen := map[string]*tally{}
	for _, h := range history {
		for _, s := range h.Specs {
			if s.Outcome != Passed && s.Outcome != Failed {
				continue
			}
			t := seen[s.key()]
			if t == nil {
				t = &tally{}
				seen[s.key()] = t
			}
			t.runs++
			sameCommit := run.Info.Commit != "" && h.Commit == run.Info.Commit
			if s.Outcome == Failed {
				t.failed++
				if sameCommit {
					t.failedHere++
				}
			} else if sameCommit {
				t.passedHere++
			}
		}
	}
	for _, s := range run.Specs {
		if s.IsSuiteNode() || (s.Outcome != Passed && s.Outcome != Failed) {
			continue
		}
		t := seen[SpecSummary{Suite: s.Suite, Name: s.Name}.key()]
		if t == nil {
			continue
		}
		h := &SpecHistory{Runs: t.runs + 1, Failed: t.failed}
		if s.Outcome == Failed {
			h.Failed++
			h.SameCommit = t.passedHere > 0
		} else {
			h.SameCommit = t.failedHere > 0
		}
		h.SameCommit = h.SameCommit && run.Info.Commit != ""
		s.History = h
		if h.SameCommit && !s.Flaky {
			s.Flaky = true
			run.Flakes = append(run.Flakes, s)
		}
	}
	run.Counts = count(run.Specs)
}
