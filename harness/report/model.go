package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// Outcome is what became of a spec over every attempt of a run.
type Outcome string

// Outcomes of a spec.
const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
	// Flaky is a spec that passed in the end after failing at least once:
	// retried by FlakeAttempts, or failed in an earlier attempt of a
	// repeated run.
	Flaky Outcome = "flaky"
)

// Verdict is a run's result: it failed when any spec or suite node failed,
// or Ginkgo reports the suite as failed for a reason of its own.
type Verdict string

// Verdicts of a run.
const (
	VerdictPassed Verdict = "passed"
	VerdictFailed Verdict = "failed"
)

// Run is a test run as the report shows it: one or more suites (Ginkgo
// merges every suite of one ginkgo command into one report), each in one
// or more attempts.
type Run struct {
	Suites  []string // the suites' descriptions
	Verdict Verdict
	// Reasons say why the run failed beyond its failed specs: a suite
	// that did not compile, a timeout, an interrupt, programmatic focus.
	Reasons []string
	Counts  Counts
	Info    Info
	// Start and End bound the last attempt of every suite.
	Start, End time.Time
	Wall       Wall
	// Attempts is how often the run was attempted (ginkgo --repeat stops
	// at the first failing attempt).
	Attempts int
	// Specs are every spec and every suite node (BeforeSuite, AfterSuite,
	// ...) of the last attempt, in report order.
	Specs []*Spec
	// Failures are the specs and suite nodes that failed, in the order
	// they failed: setup first, then specs, then teardown.
	Failures []*Spec
	// Flakes are the specs that both passed and failed, in report order.
	Flakes []*Spec
	// Slowest are the slowest specs that ran, slowest first.
	Slowest []*Spec
	// Processes are the Ginkgo processes' timelines, of the last attempt
	// of each suite.
	Timelines []Timeline
	// Comparison is this run against the previous one, when there is one.
	Comparison *Comparison
	// Generated is when the report was made.
	Generated time.Time
	// Source names the JSON report the run was read from.
	Source string
	// Warnings say what the report left out and why: a recorded attempt
	// or a previous summary it could not read.
	Warnings []string
	// Shards are the parts of a run split across machines (Merge), each
	// with its own wall time; nil for a run on one machine.
	Shards []ShardRun
	// Coverage is the run's code coverage, when its directory holds it
	// (Load; coverage.go); nil otherwise, and for a merged run.
	Coverage *Coverage
}

// Counts are a run's specs by outcome. Failed also counts failed suite
// nodes; Flaky counts every spec that both passed and failed, also one
// that failed in the last attempt (which Failed counts too).
type Counts struct {
	Specs   int `json:"specs"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	Flaky   int `json:"flaky"`
}

// Info describes where a run ran.
type Info struct {
	KubernetesVersion string
	Provider          string
	Commit            string
	Machine           string
	Processes         int
}

// Wall is where the last attempt's wall time went.
type Wall struct {
	Total time.Duration
	// Setup lasts to the end of the last BeforeSuite or
	// SynchronizedBeforeSuite node, Specs from there to the end of the
	// last spec, Teardown (AfterSuite, SynchronizedAfterSuite and
	// ReportAfterSuite nodes) from there to the end.
	Setup, Specs, Teardown time.Duration
	// AllAttempts is the wall time of every attempt, when there were more.
	AllAttempts time.Duration
	// Phases are the durations the suite reported (PhaseEntryPrefix).
	Phases []Phase
}

// Phase is a part of the run a suite timed and reported.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Spec is a spec, or a suite node, and what became of it.
type Spec struct {
	// ID is unique in the run, for the page's anchors.
	ID    string
	Suite string
	// SuitePath is the suite's directory as the run recorded it.
	SuitePath string
	// FullText is Ginkgo's: the containers' texts and the spec's; empty
	// for a suite node.
	FullText string
	// Name is FullText, or a suite node's type.
	Name     string
	NodeType types.NodeType
	Location types.CodeLocation
	Labels   []string
	Serial   bool
	Process  int
	// Start, End and RunTime are the last attempt's, over every
	// FlakeAttempts retry in it.
	Start, End time.Time
	RunTime    time.Duration
	State      types.SpecState
	Outcome    Outcome
	// Flaky is true when the spec both passed and failed in this run, or
	// in this run and one of RenderOptions.History on the same commit.
	Flaky bool
	// History is how the spec fared over RenderOptions.History's runs and
	// this one; nil without history.
	History *SpecHistory
	// Attempts are its state in each attempt of the run, oldest first.
	Attempts []types.SpecState
	// Tries is how often Ginkgo ran it in the last attempt
	// (FlakeAttempts retries it).
	Tries   int
	Failure *Failure
	// Steps are its By steps in the last attempt, with the FlakeAttempts
	// try they belong to.
	Steps    []Step
	WaitedOn []string
	// BundleEntry is the failure bundle directory the suite named in a
	// "failure bundle" report entry (harness/suite does).
	BundleEntry string
	// Output is what the spec wrote to GinkgoWriter, kept for failures.
	Output string

	// part is the index of the run directory the spec was read from
	// (Merge reads several).
	part int

	// Set by Load.
	Bundle *Bundle
	Source *Source
	Rerun  string
	// SourceNote says why Source is nil for a failure with a location:
	// the file is not below the source root, say. BundleNote says why a
	// bundle the suite named is not shown: it is not below the run
	// directory.
	SourceNote, BundleNote string
}

// Failure is why a spec failed.
type Failure struct {
	Message  string
	Location types.CodeLocation
	// NodeType is the node it failed in (It, BeforeEach, AfterEach, ...).
	NodeType types.NodeType
	Time     time.Time
	Panic    string
	// Additional are further failures, in cleanup say.
	Additional []string
}

// Step is a By step.
type Step struct {
	Text     string
	Location types.CodeLocation
	// Offset is when it started, from the spec's start.
	Offset   time.Duration
	Duration time.Duration
	// Try is the FlakeAttempts try it ran in, from 1.
	Try int
	// Failed marks the step the spec failed in.
	Failed bool
}

// Timeline is one suite's Ginkgo processes over its last attempt.
type Timeline struct {
	Suite      string
	Start, End time.Time
	Processes  []int
	// Specs are the specs that ran and the suite nodes, by process.
	Specs []*Spec
}

// IsSuiteNode reports whether s is a suite node rather than a spec.
func (s *Spec) IsSuiteNode() bool { return s.NodeType.Is(types.NodeTypesForSuiteLevelNodes) }

// IsSetup reports whether s is a BeforeSuite or SynchronizedBeforeSuite.
func (s *Spec) IsSetup() bool {
	return s.NodeType.Is(types.NodeTypeBeforeSuite | types.NodeTypeSynchronizedBeforeSuite | types.NodeTypeReportBeforeSuite)
}

// specKey identifies a spec across the attempts of one suite.
func specKey(r types.SpecReport) string {
	return r.LeafNodeType.String() + "\x00" + r.FullText() + "\x00" + r.LeafNodeLocation.String()
}

// Build makes the run of suites: for each suite, its reports of every
// attempt, oldest first (a run without --repeat has one). Info's fields
// that opts sets win over what the suites reported.
func Build(suites [][]types.Report, opts RenderOptions) *Run {
	run := &Run{Generated: time.Now()}
	ids := 0
	var failed []*Spec
	for _, attempts := range suites {
		if len(attempts) == 0 {
			continue
		}
		final := attempts[len(attempts)-1]
		if len(attempts) > run.Attempts {
			run.Attempts = len(attempts)
		}
		run.Suites = append(run.Suites, final.SuiteDescription)
		run.Reasons = append(run.Reasons, final.SpecialSuiteFailureReasons...)
		if !final.SuiteSucceeded && len(final.SpecialSuiteFailureReasons) == 0 && !hasFailure(final) {
			run.Reasons = append(run.Reasons, fmt.Sprintf("Ginkgo reports suite %q as failed without a failed spec; the run's output says why", final.SuiteDescription))
		}
		if final.SuiteHasProgrammaticFocus {
			run.Reasons = append(run.Reasons, fmt.Sprintf("suite %q has focused specs (FIt, FDescribe, ...): the others did not run", final.SuiteDescription))
		}
		if run.Start.IsZero() || (!final.StartTime.IsZero() && final.StartTime.Before(run.Start)) {
			run.Start = final.StartTime
		}
		if final.EndTime.After(run.End) {
			run.End = final.EndTime
		}
		if final.SuiteConfig.ParallelTotal > run.Info.Processes {
			run.Info.Processes = final.SuiteConfig.ParallelTotal
		}
		if len(attempts) > 1 {
			for _, a := range attempts {
				run.Wall.AllAttempts += a.EndTime.Sub(a.StartTime)
			}
		}

		// Each spec's state in each earlier attempt.
		earlier := map[string][]types.SpecReport{}
		for _, a := range attempts[:len(attempts)-1] {
			for _, sr := range a.SpecReports {
				earlier[specKey(sr)] = append(earlier[specKey(sr)], sr)
			}
		}
		tl := Timeline{Suite: final.SuiteDescription, Start: final.StartTime, End: final.EndTime}
		procs := map[int]bool{}
		for p := 1; p <= max(final.SuiteConfig.ParallelTotal, 1); p++ {
			procs[p] = true
		}
		for _, sr := range final.SpecReports {
			ids++
			s := newSpec(fmt.Sprintf("spec-%d", ids), final, sr, earlier[specKey(sr)])
			run.Specs = append(run.Specs, s)
			readEntries(run, s, sr)
			if s.Outcome == Failed {
				failed = append(failed, s)
			}
			if s.Flaky {
				run.Flakes = append(run.Flakes, s)
			}
			if s.State != types.SpecStateSkipped && s.State != types.SpecStatePending && !s.Start.IsZero() && s.Process > 0 {
				tl.Specs = append(tl.Specs, s)
				procs[s.Process] = true
			}
		}
		for p := range procs {
			tl.Processes = append(tl.Processes, p)
		}
		sort.Ints(tl.Processes)
		run.Timelines = append(run.Timelines, tl)
		wall(&run.Wall, final)
	}
	run.Wall.Total = run.End.Sub(run.Start)
	if run.Start.IsZero() {
		run.Wall.Total = 0
	}
	run.Failures = orderFailures(failed)
	run.Counts = count(run.Specs)
	run.Slowest = slowest(run.Specs, 15)
	if opts.KubernetesVersion != "" {
		run.Info.KubernetesVersion = opts.KubernetesVersion
	}
	if opts.Provider != "" {
		run.Info.Provider = opts.Provider
	}
	if opts.Commit != "" {
		run.Info.Commit = opts.Commit
	}
	if opts.Machine != "" {
		run.Info.Machine = opts.Machine
	}
	run.Verdict = VerdictPassed
	if len(run.Failures) > 0 || len(run.Reasons) > 0 || len(run.Suites) == 0 {
		run.Verdict = VerdictFailed
	}
	if len(run.Suites) == 0 {
		run.Reasons = append(run.Reasons, "the report holds no suite: did the suite compile and start?")
	}
	return run
}

func hasFailure(r types.Report) bool {
	for _, sr := range r.SpecReports {
		if sr.Failed() {
			return true
		}
	}
	return false
}

func newSpec(id string, suite types.Report, sr types.SpecReport, earlier []types.SpecReport) *Spec {
	s := &Spec{
		ID:        id,
		Suite:     suite.SuiteDescription,
		SuitePath: suite.SuitePath,
		FullText:  sr.FullText(),
		NodeType:  sr.LeafNodeType,
		Location:  sr.LeafNodeLocation,
		Labels:    sr.Labels(),
		Serial:    sr.IsSerial,
		Process:   sr.ParallelProcess,
		Start:     sr.StartTime,
		End:       sr.EndTime,
		RunTime:   sr.RunTime,
		State:     sr.State,
		Tries:     sr.NumAttempts,
	}
	s.Name = s.FullText
	if s.Name == "" || s.IsSuiteNode() {
		s.Name = strings.TrimSpace(sr.LeafNodeType.String() + " " + sr.LeafNodeText)
	}
	passed, failed := false, false
	for _, e := range earlier {
		s.Attempts = append(s.Attempts, e.State)
		passed = passed || e.State == types.SpecStatePassed
		failed = failed || e.Failed()
	}
	s.Attempts = append(s.Attempts, sr.State)
	switch {
	case sr.Failed():
		s.Outcome = Failed
		// A spec that failed every try FlakeAttempts gave it is a failure,
		// not a flake.
		s.Flaky = passed
	case sr.State == types.SpecStatePassed:
		s.Outcome = Passed
		if failed || sr.NumAttempts > 1 {
			s.Outcome, s.Flaky = Flaky, true
		}
	default:
		s.Outcome = Skipped
	}
	if sr.Failed() {
		f := sr.Failure
		s.Failure = &Failure{Message: f.Message, Location: f.Location, NodeType: f.FailureNodeType,
			Time: f.TimelineLocation.Time, Panic: f.ForwardedPanic}
		for _, af := range sr.AdditionalFailures {
			s.Failure.Additional = append(s.Failure.Additional,
				fmt.Sprintf("[%s] in %s at %s: %s", af.State, af.Failure.FailureNodeType, af.Failure.Location, af.Failure.Message))
		}
		s.Output = sr.CapturedGinkgoWriterOutput
		if sr.CapturedStdOutErr != "" {
			s.Output += sr.CapturedStdOutErr
		}
	}
	s.Steps = steps(sr)
	return s
}

// steps are sr's By steps; a Retry event starts the next try.
func steps(sr types.SpecReport) []Step {
	var out []Step
	try := 1
	end := func(i int, t time.Time) {
		if i >= 0 && out[i].Duration == 0 && !t.IsZero() {
			out[i].Duration = t.Sub(sr.StartTime) - out[i].Offset
		}
	}
	last := -1
	for _, e := range sr.SpecEvents {
		at := e.TimelineLocation.Time
		switch {
		case e.SpecEventType.Is(types.SpecEventByStart):
			end(last, at)
			out = append(out, Step{Text: e.Message, Location: e.CodeLocation, Offset: at.Sub(sr.StartTime), Try: try})
			last = len(out) - 1
		case e.SpecEventType.Is(types.SpecEventByEnd):
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].Text == e.Message && out[i].Try == try {
					out[i].Duration = e.Duration
					break
				}
			}
		case e.SpecEventType.Is(types.SpecEventNodeEnd) && e.NodeType.Is(types.NodeTypeIt|types.NodeTypesForSuiteLevelNodes):
			end(last, at)
			last = -1
		case e.SpecEventType.Is(types.SpecEventSpecRetry):
			end(last, at)
			last = -1
			try = e.Attempt + 1
		}
	}
	end(last, sr.EndTime)
	if sr.Failed() && !sr.Failure.TimelineLocation.Time.IsZero() {
		at := sr.Failure.TimelineLocation.Time
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].Try == try && !sr.StartTime.Add(out[i].Offset).After(at) {
				out[i].Failed = true
				break
			}
		}
	}
	return out
}

// readEntries takes the report entries the report shows from sr.
func readEntries(run *Run, s *Spec, sr types.SpecReport) {
	for _, e := range sr.ReportEntries {
		v := e.Value.String()
		switch {
		case e.Name == KubernetesVersionEntry && run.Info.KubernetesVersion == "":
			run.Info.KubernetesVersion = v
		case e.Name == ProviderEntry && run.Info.Provider == "":
			run.Info.Provider = v
		case e.Name == CommitEntry && run.Info.Commit == "":
			run.Info.Commit = v
		case e.Name == MachineEntry && run.Info.Machine == "":
			run.Info.Machine = v
		case e.Name == WaitedOnEntry:
			s.WaitedOn = append(s.WaitedOn, v)
		case e.Name == BundleEntry:
			s.BundleEntry = v
		case strings.HasPrefix(e.Name, PhaseEntryPrefix):
			if d, ok := entryDuration(e.Value); ok {
				run.Wall.Phases = append(run.Wall.Phases, Phase{Name: strings.TrimPrefix(e.Name, PhaseEntryPrefix), Duration: d})
			}
		}
	}
}

// entryDuration reads a report entry's time.Duration (JSON nanoseconds)
// or duration string ("1.5s").
func entryDuration(v types.ReportEntryValue) (time.Duration, bool) {
	var ns int64
	if json.Unmarshal([]byte(v.AsJSON), &ns) == nil {
		return time.Duration(ns), true
	}
	var s string
	if json.Unmarshal([]byte(v.AsJSON), &s) != nil {
		s = v.String()
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// wall adds how r's wall time divides into setup (up to the end of the
// last BeforeSuite node: every process waits for it), specs (up to the
// end of the last spec) and teardown (the rest) to w.
func wall(w *Wall, r types.Report) {
	if r.StartTime.IsZero() || r.EndTime.IsZero() {
		return
	}
	setupEnd, specsEnd := r.StartTime, time.Time{}
	for _, sr := range r.SpecReports {
		switch {
		case sr.LeafNodeType.Is(types.NodeTypeBeforeSuite | types.NodeTypeSynchronizedBeforeSuite | types.NodeTypeReportBeforeSuite):
			if sr.EndTime.After(setupEnd) {
				setupEnd = sr.EndTime
			}
		case sr.LeafNodeType.Is(types.NodeTypesForSuiteLevelNodes):
		case sr.State != types.SpecStateSkipped && sr.State != types.SpecStatePending:
			if sr.EndTime.After(specsEnd) {
				specsEnd = sr.EndTime
			}
		}
	}
	setupEnd = minTime(setupEnd, r.EndTime)
	w.Setup += setupEnd.Sub(r.StartTime)
	if specsEnd.After(setupEnd) {
		specsEnd = minTime(specsEnd, r.EndTime)
		w.Specs += specsEnd.Sub(setupEnd)
		w.Teardown += r.EndTime.Sub(specsEnd)
	} else {
		w.Teardown += r.EndTime.Sub(setupEnd)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// orderFailures puts setup failures first, then specs in the order they
// failed, then teardown.
func orderFailures(failed []*Spec) []*Spec {
	rank := func(s *Spec) int {
		switch {
		case s.IsSetup():
			return 0
		case s.IsSuiteNode():
			return 2
		}
		return 1
	}
	at := func(s *Spec) time.Time {
		if s.Failure != nil && !s.Failure.Time.IsZero() {
			return s.Failure.Time
		}
		return s.End
	}
	sort.SliceStable(failed, func(i, j int) bool {
		if ri, rj := rank(failed[i]), rank(failed[j]); ri != rj {
			return ri < rj
		}
		return at(failed[i]).Before(at(failed[j]))
	})
	return failed
}

func count(specs []*Spec) Counts {
	var c Counts
	for _, s := range specs {
		if s.Flaky {
			c.Flaky++
		}
		if s.IsSuiteNode() {
			if s.Outcome == Failed {
				c.Failed++
			}
			continue
		}
		c.Specs++
		switch s.Outcome {
		case Passed:
			c.Passed++
		case Failed:
			c.Failed++
		case Skipped:
			c.Skipped++
		}
	}
	return c
}

// slowest returns the n specs that ran longest, slowest first.
func slowest(specs []*Spec, n int) []*Spec {
	var ran []*Spec
	for _, s := range specs {
		if !s.IsSuiteNode() && s.Outcome != Skipped {
			ran = append(ran, s)
		}
	}
	sort.SliceStable(ran, func(i, j int) bool { return ran[i].RunTime > ran[j].RunTime })
	if len(ran) > n {
		ran = ran[:n]
	}
	return ran
}
