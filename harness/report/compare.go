package report

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"
)

// Summary is what the next run compares itself with: SummaryFile, written
// beside the page.
type Summary struct {
	Start   time.Time     `json:"start"`
	Verdict Verdict       `json:"verdict"`
	Commit  string        `json:"commit,omitempty"`
	Counts  Counts        `json:"counts"`
	Specs   []SpecSummary `json:"specs"`
}

// SpecSummary is one spec, or failed suite node, of a Summary.
type SpecSummary struct {
	Suite   string        `json:"suite"`
	Name    string        `json:"name"`
	Outcome Outcome       `json:"outcome"`
	RunTime time.Duration `json:"runTime"`
}

func (s SpecSummary) key() string { return s.Suite + "\x00" + s.Name }

// Summary summarizes the run for the next one.
func (r *Run) Summary() Summary {
	out := Summary{Start: r.Start, Verdict: r.Verdict, Commit: r.Info.Commit, Counts: r.Counts}
	for _, s := range r.Specs {
		if s.IsSuiteNode() && s.Outcome != Failed {
			continue
		}
		out.Specs = append(out.Specs, SpecSummary{Suite: s.Suite, Name: s.Name, Outcome: s.Outcome, RunTime: s.RunTime})
	}
	return out
}

// ReadSummary reads a Summary that Write wrote: a regular file of at most
// MaxSummarySize bytes.
func ReadSummary(path string) (Summary, error) {
	f, err := openInput(path)
	if err != nil {
		return Summary{}, err
	}
	return readSummary(f)
}

// readSummary reads the Summary in f (closed here).
func readSummary(f *os.File) (Summary, error) {
	var s Summary
	path := f.Name()
	data, err := readInput(f, summaryInput)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s is not a run summary as kubeharness report writes it: %w", path, err)
	}
	return s, nil
}

// Comparison is a run against the one before.
type Comparison struct {
	Previous Summary
	// NewFailures failed in this run but not in the previous one (or did
	// not exist then); Fixed failed then and passed now.
	NewFailures, Fixed []Change
	// Slower took more than SlowerFactor times as long as in the previous
	// run, and at least SlowerMin in this one, slowest change first.
	Slower []Change
}

// Change is one spec's difference between two runs.
type Change struct {
	Spec           *Spec
	Before         Outcome
	BeforeRunTime  time.Duration
	NewSinceBefore bool // the spec did not exist in the previous run
}

// Comparison thresholds: a spec is slower when it took more than 1.5
// times as long as before; specs that took under a second are left out,
// their timings are noise.
const (
	SlowerFactor = 1.5
	SlowerMin    = time.Second
)

// Compare compares r with the run prev summarizes.
func (r *Run) Compare(prev Summary) *Comparison {
	c := &Comparison{Previous: prev}
	before := map[string]SpecSummary{}
	for _, s := range prev.Specs {
		before[s.key()] = s
	}
	for _, s := range r.Specs {
		b, existed := before[SpecSummary{Suite: s.Suite, Name: s.Name}.key()]
		switch {
		case s.Outcome == Failed && (!existed || b.Outcome != Failed):
			c.NewFailures = append(c.NewFailures, Change{Spec: s, Before: b.Outcome, BeforeRunTime: b.RunTime, NewSinceBefore: !existed})
		case existed && b.Outcome == Failed && (s.Outcome == Passed || s.Outcome == Flaky):
			c.Fixed = append(c.Fixed, Change{Spec: s, Before: b.Outcome, BeforeRunTime: b.RunTime})
		}
		if existed && s.Outcome != Skipped && b.Outcome != Skipped && b.RunTime > 0 &&
			s.RunTime >= SlowerMin && float64(s.RunTime) > SlowerFactor*float64(b.RunTime) {
			c.Slower = append(c.Slower, Change{Spec: s, Before: b.Outcome, BeforeRunTime: b.RunTime})
		}
	}
	sort.SliceStable(c.Slower, func(i, j int) bool {
		return c.Slower[i].Spec.RunTime-c.Slower[i].BeforeRunTime > c.Slower[j].Spec.RunTime-c.Slower[j].BeforeRunTime
	})
	return c
}
