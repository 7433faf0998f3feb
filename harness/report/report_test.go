package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/ginkgo/v2/types"
)

var t0 = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// specBuilder builds a types.SpecReport.
type specBuilder struct{ r types.SpecReport }

// mkSpec is an It named text in the container "widgets" that passed on
// process 1, starting at t0 and taking a second.
func mkSpec(text string) *specBuilder {
	return &specBuilder{types.SpecReport{
		ContainerHierarchyTexts: []string{"widgets"}, LeafNodeType: types.NodeTypeIt, LeafNodeText: text,
		LeafNodeLocation: types.CodeLocation{FileName: "/src/e2e/widgets_test.go", LineNumber: len(text)},
		State:            types.SpecStatePassed, ParallelProcess: 1, NumAttempts: 1,
		StartTime: t0, EndTime: t0.Add(time.Second), RunTime: time.Second,
	}}
}

// mkNode is a suite node of type nt that passed on process 1.
func mkNode(nt types.NodeType) *specBuilder {
	b := mkSpec("")
	b.r.ContainerHierarchyTexts, b.r.LeafNodeType = nil, nt
	return b
}

func (b *specBuilder) at(proc int, start, took time.Duration) *specBuilder {
	b.r.ParallelProcess, b.r.StartTime, b.r.EndTime, b.r.RunTime = proc, t0.Add(start), t0.Add(start+took), took
	return b
}

func (b *specBuilder) state(s types.SpecState) *specBuilder { b.r.State = s; return b }
func (b *specBuilder) tries(n int) *specBuilder             { b.r.NumAttempts = n; return b }

func (b *specBuilder) failed(msg string) *specBuilder {
	b.r.State = types.SpecStateFailed
	b.r.Failure = types.Failure{Message: msg, Location: types.CodeLocation{FileName: "/src/e2e/widgets_test.go", LineNumber: 42},
		FailureNodeType: types.NodeTypeIt, TimelineLocation: types.TimelineLocation{Time: b.r.EndTime}}
	return b
}

func (b *specBuilder) entry(name string, value any) *specBuilder {
	b.r.ReportEntries = append(b.r.ReportEntries, types.ReportEntry{Name: name, Value: types.WrapEntryValue(value)})
	return b
}

func (b *specBuilder) obj() types.SpecReport { return b.r }

// mkSuite is a suite report of specs in procs processes, from t0 to the
// last spec's end plus a second; it succeeded unless a spec failed.
func mkSuite(t testing.TB, procs int, specs ...*specBuilder) types.Report {
	t.Helper()
	r := types.Report{SuitePath: "/src/e2e", SuiteDescription: "widgets e2e", SuiteSucceeded: true, StartTime: t0,
		SuiteConfig: types.SuiteConfig{ParallelTotal: procs}}
	for _, s := range specs {
		r.SpecReports = append(r.SpecReports, s.obj())
		if s.r.EndTime.After(r.EndTime) {
			r.EndTime = s.r.EndTime
		}
		if s.r.Failed() {
			r.SuiteSucceeded = false
		}
	}
	r.EndTime = r.EndTime.Add(time.Second)
	r.RunTime = r.EndTime.Sub(r.StartTime)
	return roundTrip(t, r)
}

// roundTrip passes r through JSON, as a report read from disk is.
func roundTrip(t testing.TB, r types.Report) types.Report {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out types.Report
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func names(specs []*Spec) []string {
	out := []string{}
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestBuild(t *testing.T) {
	type result struct {
		Verdict  Verdict
		Counts   Counts
		Failures []string
		Flakes   []string
		Reasons  int
		Attempts int
	}
	tests := []struct {
		name   string
		suites func(t *testing.T) [][]types.Report
		want   result
	}{{
		name: "a run that passed: skipped specs are counted apart",
		suites: func(t *testing.T) [][]types.Report {
			return [][]types.Report{{mkSuite(t, 2, mkSpec("a"), mkSpec("b").at(2, 0, time.Second), mkSpec("c").state(types.SpecStateSkipped),
				mkSpec("d").state(types.SpecStatePending))}}
		},
		want: result{Verdict: VerdictPassed, Counts: Counts{Specs: 4, Passed: 2, Skipped: 2}, Failures: []string{}, Flakes: []string{}, Attempts: 1},
	}, {
		name: "retried by FlakeAttempts and passed: flaky, not passed",
		suites: func(t *testing.T) [][]types.Report {
			return [][]types.Report{{mkSuite(t, 1, mkSpec("a"), mkSpec("b").tries(2))}}
		},
		want: result{Verdict: VerdictPassed, Counts: Counts{Specs: 2, Passed: 1, Flaky: 1}, Failures: []string{}, Flakes: []string{"widgets b"}, Attempts: 1},
	}, {
		name: "failed every FlakeAttempts try: a failure, not a flake",
		suites: func(t *testing.T) [][]types.Report {
			return [][]types.Report{{mkSuite(t, 1, mkSpec("a"), mkSpec("b").tries(3).failed("boom"))}}
		},
		want: result{Verdict: VerdictFailed, Counts: Counts{Specs: 2, Passed: 1, Failed: 1}, Failures: []string{"widgets b"}, Flakes: []string{}, Attempts: 1},
	}, {
		name: "passed in the first attempt of a repeated run, failed in the second: failed and flaky",
		suites: func(t *testing.T) [][]types.Report {
			first := mkSuite(t, 1, mkSpec("a"), mkSpec("b"))
			second := mkSuite(t, 1, mkSpec("a"), mkSpec("b").failed("boom"))
			return [][]types.Report{{first, second}}
		},
		want: result{Verdict: VerdictFailed, Counts: Counts{Specs: 2, Passed: 1, Failed: 1, Flaky: 1}, Failures: []string{"widgets b"}, Flakes: []string{"widgets b"}, Attempts: 2},
	}, {
		name: "failed in an earlier attempt, passed in the last: flaky",
		suites: func(t *testing.T) [][]types.Report {
			first := mkSuite(t, 1, mkSpec("a").failed("boom"))
			second := mkSuite(t, 1, mkSpec("a"))
			return [][]types.Report{{first, second}}
		},
		want: result{Verdict: VerdictPassed, Counts: Counts{Specs: 1, Flaky: 1}, Failures: []string{}, Flakes: []string{"widgets a"}, Attempts: 2},
	}, {
		name: "a failed BeforeSuite fails the run and comes first, before the specs it kept from running",
		suites: func(t *testing.T) [][]types.Report {
			return [][]types.Report{{mkSuite(t, 2,
				mkSpec("late").at(1, 9*time.Second, time.Second).failed("late"),
				mkNode(types.NodeTypeSynchronizedBeforeSuite).failed("no control plane"),
				mkSpec("a").state(types.SpecStateSkipped))}}
		},
		want: result{Verdict: VerdictFailed, Counts: Counts{Specs: 2, Failed: 2, Skipped: 1},
			Failures: []string{"SynchronizedBeforeSuite", "widgets late"}, Flakes: []string{}, Attempts: 1},
	}, {
		name: "failures in the order they happened",
		suites: func(t *testing.T) [][]types.Report {
			return [][]types.Report{{mkSuite(t, 2,
				mkSpec("second").at(1, 5*time.Second, time.Second).failed("2"),
				mkSpec("first").at(2, time.Second, time.Second).failed("1"),
				mkNode(types.NodeTypeAfterSuite).at(1, 20*time.Second, time.Second).failed("teardown"))}}
		},
		want: result{Verdict: VerdictFailed, Counts: Counts{Specs: 2, Failed: 3},
			Failures: []string{"widgets first", "widgets second", "AfterSuite"}, Flakes: []string{}, Attempts: 1},
	}, {
		name: "a suite that did not compile fails the run with Ginkgo's reason",
		suites: func(t *testing.T) [][]types.Report {
			return [][]types.Report{{{SuitePath: "/src/e2e", SuiteDescription: "e2e", SpecialSuiteFailureReasons: []string{"Failed to compile e2e"}}}}
		},
		want: result{Verdict: VerdictFailed, Failures: []string{}, Flakes: []string{}, Reasons: 1, Attempts: 1},
	}, {
		name: "Ginkgo reports a failure without a failed spec: the run failed, and the page says so",
		suites: func(t *testing.T) [][]types.Report {
			r := mkSuite(t, 1, mkSpec("a"))
			r.SuiteSucceeded = false
			return [][]types.Report{{r}}
		},
		want: result{Verdict: VerdictFailed, Counts: Counts{Specs: 1, Passed: 1}, Failures: []string{}, Flakes: []string{}, Reasons: 1, Attempts: 1},
	}, {
		name: "programmatic focus fails the run, as it fails ginkgo",
		suites: func(t *testing.T) [][]types.Report {
			r := mkSuite(t, 1, mkSpec("a"))
			r.SuiteHasProgrammaticFocus = true
			return [][]types.Report{{r}}
		},
		want: result{Verdict: VerdictFailed, Counts: Counts{Specs: 1, Passed: 1}, Failures: []string{}, Flakes: []string{}, Reasons: 1, Attempts: 1},
	}, {
		name:   "no suite at all is no pass",
		suites: func(*testing.T) [][]types.Report { return nil },
		want:   result{Verdict: VerdictFailed, Failures: []string{}, Flakes: []string{}, Reasons: 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := Build(tc.suites(t), RenderOptions{})
			got := result{Verdict: run.Verdict, Counts: run.Counts, Failures: names(run.Failures), Flakes: names(run.Flakes),
				Reasons: len(run.Reasons), Attempts: run.Attempts}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s\nreasons: %q", diff, run.Reasons)
			}
		})
	}
}

func TestBuildInfoAndWall(t *testing.T) {
	suite := mkSuite(t, 2,
		mkNode(types.NodeTypeSynchronizedBeforeSuite).at(1, 0, 2*time.Second).
			entry(KubernetesVersionEntry, "v1.37.1").entry(ProviderEntry, "envtest").entry(CommitEntry, "abc").
			entry(PhaseEntryPrefix+"control plane", 1500*time.Millisecond),
		mkNode(types.NodeTypeSynchronizedBeforeSuite).at(2, 0, 2*time.Second),
		mkSpec("a").at(1, 2*time.Second, 3*time.Second).entry(WaitedOnEntry, "Deployment Available"),
		mkSpec("b").at(2, 2*time.Second, time.Second),
		// Process 2 waits in its SynchronizedAfterSuite while process 1
		// still runs a spec: teardown is what comes after the last spec.
		mkNode(types.NodeTypeSynchronizedAfterSuite).at(2, 3*time.Second, 3*time.Second),
		mkNode(types.NodeTypeSynchronizedAfterSuite).at(1, 5*time.Second, time.Second),
	)
	run := Build([][]types.Report{{suite}}, RenderOptions{Commit: "given", Machine: "8 cores"})
	wantInfo := Info{KubernetesVersion: "v1.37.1", Provider: "envtest", Commit: "given", Machine: "8 cores", Processes: 2}
	if diff := cmp.Diff(wantInfo, run.Info); diff != "" {
		t.Errorf("info: options win over entries, entries fill the rest (-want +got)\n%s", diff)
	}
	wantWall := Wall{Total: 7 * time.Second, Setup: 2 * time.Second, Specs: 3 * time.Second, Teardown: 2 * time.Second,
		Phases: []Phase{{Name: "control plane", Duration: 1500 * time.Millisecond}}}
	if diff := cmp.Diff(wantWall, run.Wall); diff != "" {
		t.Errorf("wall (-want +got)\n%s", diff)
	}
	if got := run.Slowest[0].WaitedOn; !cmp.Equal(got, []string{"Deployment Available"}) {
		t.Errorf("the slowest spec waited on %q, want its waited-on entry", got)
	}
	if diff := cmp.Diff([]int{1, 2}, run.Timelines[0].Processes); diff != "" {
		t.Errorf("timeline processes (-want +got)\n%s", diff)
	}
}

func TestSlowest(t *testing.T) {
	var specs []*specBuilder
	for i, took := range []time.Duration{3, 20, 1, 7, 15, 2, 9, 30, 4, 11, 5, 6, 8, 10, 12, 13, 14} {
		specs = append(specs, mkSpec(string(rune('a'+i))).at(1, 0, took*time.Second))
	}
	specs = append(specs,
		mkSpec("skipped").at(1, 0, time.Hour).state(types.SpecStateSkipped),
		mkNode(types.NodeTypeBeforeSuite).at(1, 0, time.Hour))
	run := Build([][]types.Report{{mkSuite(t, 1, specs...)}}, RenderOptions{})
	var got []time.Duration
	for _, s := range run.Slowest {
		got = append(got, s.RunTime/time.Second)
	}
	want := []time.Duration{30, 20, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the 15 slowest specs that ran, slowest first, no suite nodes (-want +got, seconds)\n%s", diff)
	}
}

func TestSteps(t *testing.T) {
	by := func(msg string, at time.Duration) types.SpecEvent {
		return types.SpecEvent{SpecEventType: types.SpecEventByStart, Message: msg, TimelineLocation: types.TimelineLocation{Time: t0.Add(at)}}
	}
	b := mkSpec("a").at(1, 0, 10*time.Second).tries(2).failed("boom")
	b.r.Failure.TimelineLocation.Time = t0.Add(8 * time.Second)
	b.r.SpecEvents = types.SpecEvents{
		by("create", time.Second),
		by("wait", 2*time.Second),
		{SpecEventType: types.SpecEventNodeEnd, NodeType: types.NodeTypeIt, TimelineLocation: types.TimelineLocation{Time: t0.Add(4 * time.Second)}},
		{SpecEventType: types.SpecEventSpecRetry, Attempt: 1, TimelineLocation: types.TimelineLocation{Time: t0.Add(5 * time.Second)}},
		by("create", 6*time.Second),
		by("wait", 7*time.Second),
		by("check", 9*time.Second),
	}
	run := Build([][]types.Report{{mkSuite(t, 1, b)}}, RenderOptions{})
	want := []Step{
		{Text: "create", Offset: time.Second, Duration: time.Second, Try: 1},
		{Text: "wait", Offset: 2 * time.Second, Duration: 2 * time.Second, Try: 1},
		{Text: "create", Offset: 6 * time.Second, Duration: time.Second, Try: 2},
		{Text: "wait", Offset: 7 * time.Second, Duration: 2 * time.Second, Try: 2, Failed: true},
		{Text: "check", Offset: 9 * time.Second, Duration: time.Second, Try: 2},
	}
	if diff := cmp.Diff(want, run.Specs[0].Steps); diff != "" {
		t.Errorf("steps: each try's, the one the failure happened in marked (-want +got)\n%s", diff)
	}
}

func TestCompare(t *testing.T) {
	prev := Summary{Start: t0.Add(-time.Hour), Specs: []SpecSummary{
		{Suite: "widgets e2e", Name: "widgets was passing", Outcome: Passed, RunTime: time.Second},
		{Suite: "widgets e2e", Name: "widgets still failing", Outcome: Failed, RunTime: time.Second},
		{Suite: "widgets e2e", Name: "widgets was failing", Outcome: Failed, RunTime: time.Second},
		{Suite: "widgets e2e", Name: "widgets was failing, now flaky", Outcome: Failed, RunTime: time.Second},
		{Suite: "widgets e2e", Name: "widgets twice as slow", Outcome: Passed, RunTime: time.Second},
		{Suite: "widgets e2e", Name: "widgets 45 % slower", Outcome: Passed, RunTime: 2 * time.Second},
		{Suite: "widgets e2e", Name: "widgets fast and four times slower", Outcome: Passed, RunTime: 100 * time.Millisecond},
		{Suite: "widgets e2e", Name: "widgets skipped now", Outcome: Passed, RunTime: time.Second},
		{Suite: "other suite", Name: "widgets new and failing", Outcome: Failed, RunTime: time.Second},
	}}
	run := Build([][]types.Report{{mkSuite(t, 1,
		mkSpec("was passing").failed("boom"),
		mkSpec("still failing").failed("boom"),
		mkSpec("was failing"),
		mkSpec("was failing, now flaky").tries(2),
		mkSpec("twice as slow").at(1, 0, 2*time.Second),
		mkSpec("45 % slower").at(1, 0, 2900*time.Millisecond),
		mkSpec("fast and four times slower").at(1, 0, 400*time.Millisecond),
		mkSpec("skipped now").at(1, 0, 5*time.Second).state(types.SpecStateSkipped),
		mkSpec("new and failing").failed("boom"),
	)}}, RenderOptions{})
	c := run.Compare(prev)
	changes := func(cs []Change) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Spec.Name)
		}
		return out
	}
	got := map[string][]string{"new failures": changes(c.NewFailures), "fixed": changes(c.Fixed), "slower": changes(c.Slower)}
	want := map[string][]string{
		"new failures": {"widgets was passing", "widgets new and failing"},
		"fixed":        {"widgets was failing", "widgets was failing, now flaky"},
		"slower":       {"widgets twice as slow"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if !c.NewFailures[1].NewSinceBefore || c.NewFailures[0].NewSinceBefore {
		t.Errorf("only a spec of the same name in another suite is new: %+v", c.NewFailures)
	}
}

func TestWriteAttempt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), AttemptsDir)
	first := mkSuite(t, 1, mkSpec("a"))
	second := first
	second.StartTime = t0.Add(time.Minute)
	for _, step := range []struct {
		invocation string
		r          types.Report
		want       []string
	}{
		{"100", first, []string{"100-1.json"}},
		{"100", second, []string{"100-1.json", "100-2.json"}},
		// A new ginkgo command: the earlier one's attempts go.
		{"200", first, []string{"200-1.json"}},
	} {
		if err := writeAttempt(dir, step.invocation, step.r); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("after invocation %s: (-want +got)\n%s", step.invocation, diff)
		}
	}

	// The attempts of the run whose last attempt report.json holds, and
	// only those.
	recorded := []attempt{{"100", 1, first}, {"100", 2, second}, {"300", 1, mkSuite(t, 1, mkSpec("other"))}}
	final := second
	final.SpecReports = append(final.SpecReports, mkNode(types.NodeTypeReportAfterSuite).obj())
	got := attemptsOf(final, recorded)
	if len(got) != 2 || !got[0].StartTime.Equal(first.StartTime) || len(got[1].SpecReports) != 2 {
		t.Errorf("attemptsOf: got %d attempts, want the first recorded one and then report.json's", len(got))
	}
	if got := attemptsOf(mkSuite(t, 1, mkSpec("unrecorded")), recorded); len(got) != 1 {
		t.Errorf("a run no attempt was recorded of has %d attempts, want 1", len(got))
	}
}

// loadRecorded loads a recorded run, with the sources of this checkout.
func loadRecorded(t testing.TB, dir string, opts RenderOptions) *Run {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	opts.SourceRoot = root
	if opts.OutDir == "" {
		opts.OutDir = filepath.Join(dir, OutDir)
	}
	opts.Previous = filepath.Join(t.TempDir(), "none.json")
	run, err := Load(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

const failingSpec = "widgets rejects a <b>huge</b> widget & says why"

func TestLoadRecorded(t *testing.T) {
	run := loadRecorded(t, runOne, RenderOptions{Rerun: "make e2e FOCUS={{.Focus}}"})
	if diff := cmp.Diff(Counts{Specs: 6, Passed: 3, Failed: 1, Skipped: 1, Flaky: 1}, run.Counts); diff != "" {
		t.Errorf("counts (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(Info{KubernetesVersion: "v1.37.1", Provider: "fixture", Commit: "0123456789abcdef", Machine: run.Info.Machine, Processes: 2}, run.Info); diff != "" || run.Info.Machine == "" {
		t.Errorf("info (-want +got)\n%s", diff)
	}
	if len(run.Failures) != 1 {
		t.Fatalf("failures: %q, want %q", names(run.Failures), failingSpec)
	}
	f := run.Failures[0]
	if f.Name != failingSpec || !strings.Contains(f.Failure.Message, "the webhook let widget w-1 <huge> through") {
		t.Errorf("failure %q: %q", f.Name, f.Failure.Message)
	}
	if f.Source == nil || f.Source.File != "harness/report/testdata/suite/suite_test.go" {
		t.Fatalf("source of the failure: %+v; want it found below the source root by the tail of the recorded path", f.Source)
	}
	var hit []string
	for _, l := range f.Source.Lines {
		if l.Hit {
			hit = append(hit, l.Text)
		}
	}
	if len(f.Source.Lines) != 2*sourceContext+1 || len(hit) != 1 || !strings.Contains(hit[0], `Expect(verdict).To(Equal("rejected"),`) {
		t.Errorf("source: %d lines, highlighted %q; want 11 with the failing Expect highlighted (re-record the fixture after editing testdata/suite)", len(f.Source.Lines), hit)
	}
	var steps []string
	for _, s := range f.Steps {
		if s.Failed {
			steps = append(steps, "*"+s.Text)
		} else {
			steps = append(steps, s.Text)
		}
	}
	if diff := cmp.Diff([]string{"creating widget w-1 with size <huge>", "*waiting for the webhook's verdict"}, steps); diff != "" {
		t.Errorf("steps (-want +got)\n%s", diff)
	}
	if f.Bundle == nil {
		t.Fatal("the failure has no bundle")
	}
	var files []string
	for _, bf := range f.Bundle.Files {
		files = append(files, bf.Name+" "+bf.Href)
	}
	wantFiles := []string{
		"events.txt ../failures/widgets-rejects-a-b-huge-b-widget-says-why/events.txt",
		"widgets.log ../failures/widgets-rejects-a-b-huge-b-widget-says-why/widgets.log",
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("bundle files, linked relative to report/ (-want +got)\n%s", diff)
	}
	if len(f.Bundle.Excerpts) != 2 || f.Bundle.Excerpts[0].Name != "events.txt" || !strings.Contains(f.Bundle.Excerpts[0].Text, "Rejected") {
		t.Errorf("excerpts: %+v; want events.txt first, then the log", f.Bundle.Excerpts)
	}
	if want := `make e2e FOCUS='widgets rejects a <b>huge</b> widget & says why'`; f.Rerun != want {
		t.Errorf("rerun: %s\nwant %s", f.Rerun, want)
	}
	if diff := cmp.Diff([]string{"widgets settles a widget eventually"}, names(run.Flakes)); diff != "" {
		t.Errorf("flakes (-want +got)\n%s", diff)
	}
	if fl := run.Flakes[0]; fl.Tries != 2 || fl.Outcome != Flaky {
		t.Errorf("the FlakeAttempts spec: %d tries, outcome %s; want 2, flaky", fl.Tries, fl.Outcome)
	}
	if diff := cmp.Diff([]int{1, 2}, run.Timelines[0].Processes); diff != "" {
		t.Errorf("processes (-want +got)\n%s", diff)
	}
}

func TestLoadRepeated(t *testing.T) {
	run := loadRecorded(t, runRepeat, RenderOptions{})
	if run.Attempts != 2 {
		t.Errorf("attempts: %d, want 2", run.Attempts)
	}
	if diff := cmp.Diff([]string{"widgets lists widgets across namespaces"}, names(run.Failures)); diff != "" {
		t.Errorf("failures (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"widgets lists widgets across namespaces"}, names(run.Flakes)); diff != "" {
		t.Errorf("flakes: the spec that passed in attempt 1 and failed in attempt 2 (-want +got)\n%s", diff)
	}
	if f := run.Failures[0]; formatStates(f) != "passed, failed" || f.Bundle == nil {
		t.Errorf("attempts %q, bundle %v; want passed, failed and the failed attempt's bundle", formatStates(f), f.Bundle)
	}
	if want := "go tool ginkgo --focus='widgets lists widgets across namespaces' ./harness/report/testdata/suite"; run.Failures[0].Rerun != want {
		t.Errorf("rerun: %s\nwant %s", run.Failures[0].Rerun, want)
	}
}

func TestLoadWithoutReport(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir, RenderOptions{})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, JSONReportFile)) || !strings.Contains(err.Error(), "--json-report=report.json") {
		t.Errorf("error %v: want where the report was looked for and how a run writes it", err)
	}
}

func TestWriteComparesWithThePreviousRun(t *testing.T) {
	parent := t.TempDir()
	next, err := filepath.Abs(runOne)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(parent, "artifacts"), os.DirFS(runRepeat)); err != nil {
		t.Fatal(err)
	}
	// A relative run directory, as on a command line.
	t.Chdir(parent)
	dir := "artifacts"
	w, err := Write(dir, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Run.Comparison != nil {
		t.Error("the first run has nothing to compare with")
	}
	for _, f := range []string{IndexFile, SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, OutDir, f)); err != nil {
			t.Errorf("Write wrote no %s: %v", f, err)
		}
	}
	// The same run made again is no previous run of itself.
	if _, err := Write(dir, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, OutDir, PreviousFile)); !os.IsNotExist(err) {
		t.Errorf("re-rendering the same run made %s (%v)", PreviousFile, err)
	}

	// The next run, in place of this one's files; the page's directory
	// stays.
	for _, f := range []string{AttemptsDir, "failures", "report.json"} {
		if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(dir, os.DirFS(next)); err != nil {
		t.Fatal(err)
	}
	w, err = Write(dir, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := w.Run.Comparison
	if c == nil {
		t.Fatal("no comparison with the previous run")
	}
	changes := func(cs []Change) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Spec.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{failingSpec}, changes(c.NewFailures)); diff != "" {
		t.Errorf("new failures (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"widgets lists widgets across namespaces"}, changes(c.Fixed)); diff != "" {
		t.Errorf("fixed (-want +got)\n%s", diff)
	}
	prev, err := ReadSummary(filepath.Join(dir, OutDir, PreviousFile))
	if err != nil || prev.Verdict != VerdictFailed || prev.Counts.Failed != 1 {
		t.Errorf("previous.json: %+v, %v; want the repeated run's summary", prev, err)
	}
	page, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`id="comparison"`)) {
		t.Error("the page shows no comparison")
	}
}

func TestHTMLEscapesSpecText(t *testing.T) {
	evil := `<script>alert("spec")</script><img src=x onerror=alert(1)>`
	b := mkSpec(evil).failed(`message </pre><script>alert("message")</script>`)
	b.r.SpecEvents = types.SpecEvents{{SpecEventType: types.SpecEventByStart, Message: `<script>alert("step")</script>`,
		TimelineLocation: types.TimelineLocation{Time: t0}}}
	b.r.CapturedGinkgoWriterOutput = `<script>alert("output")</script>`
	r := mkSuite(t, 1, b.entry(WaitedOnEntry, `<script>alert("waited")</script>`), mkSpec("b").entry(ProviderEntry, `<script>alert("provider")</script>`))
	r.SuiteDescription = `<script>alert("suite")</script>`
	run := Build([][]types.Report{{r}}, RenderOptions{})
	run.Failures[0].Rerun = `make e2e FOCUS='<script>alert("rerun")</script>'`
	var page bytes.Buffer
	if err := run.HTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if n := strings.Count(html, "<script"); n != 1 {
		t.Errorf("the page holds %d <script elements, want only its own:\n%s", n, html)
	}
	for _, want := range []string{
		`widgets &lt;script&gt;alert(&#34;spec&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`,
		`message &lt;/pre&gt;&lt;script&gt;`,
		`&lt;script&gt;alert(&#34;step&#34;)`,
		`&lt;script&gt;alert(&#34;output&#34;)`,
		`&lt;script&gt;alert(&#34;waited&#34;)`,
		`&lt;script&gt;alert(&#34;provider&#34;)`,
		`&lt;script&gt;alert(&#34;suite&#34;)`,
		`&lt;script&gt;alert(&#34;rerun&#34;)`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks the escaped text %s", want)
		}
	}
}

func TestHTMLOfRecordedRun(t *testing.T) {
	run := loadRecorded(t, runOne, RenderOptions{})
	var page bytes.Buffer
	if err := run.HTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{
		`rejects a &lt;b&gt;huge&lt;/b&gt; widget &amp; says why`,
		`href="../failures/widgets-rejects-a-b-huge-b-widget-says-why/events.txt"`,
		`<tr class="hit"><td class="n">119</td>`,
		`data-process="1"`, `data-process="2"`,
		`class="bar passed serial"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, "<b>huge</b>") {
		t.Error("the page holds the spec's text unescaped")
	}
	// Self-contained: nothing is loaded from elsewhere.
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).FindString(html); m != "" {
		t.Errorf("the page loads %s from the network", m)
	}
}

func TestMarkdown(t *testing.T) {
	run := loadRecorded(t, runOne, RenderOptions{})
	var md bytes.Buffer
	if err := run.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	got := md.String()
	for _, want := range []string{
		"### ❌ report fixture: FAILED\n",
		"| 6 | 3 | 1 | 1 | 1 |",
		"<summary>❌ widgets rejects a &lt;b&gt;huge&lt;/b&gt; widget &amp; says why</summary>",
		"at `harness/report/testdata/suite/suite_test.go:119`",
		"the webhook let widget w-1 <huge> through", // in a code block
		"⚠️ widgets settles a widget eventually (2 tries)",
		"**Slowest specs**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	_, slowest, _ := strings.Cut(got, "**Slowest specs**")
	if rows := strings.Count(slowest, "\n| "); rows != 5+1 {
		t.Errorf("slowest: %d table rows, want a header and 5", rows)
	}
}

func TestFocusFor(t *testing.T) {
	for _, name := range []string{
		failingSpec,
		`a spec's "quoted" $HOME (and [brackets]) *.* \ back`,
		"tab\there",
	} {
		focus := FocusFor(name)
		if strings.ContainsAny(focus, "'$\t") {
			t.Errorf("FocusFor(%q) = %q holds a character a shell or make would read", name, focus)
		}
		re, err := regexp.Compile(focus)
		if err != nil {
			t.Errorf("FocusFor(%q) = %q: %v", name, focus, err)
			continue
		}
		// Ginkgo matches the suite's description and the spec's text.
		if !re.MatchString("report fixture " + name) {
			t.Errorf("FocusFor(%q) = %q does not match the spec", name, focus)
		}
		if re.MatchString("report fixture " + strings.Replace(name, "a", "b", 1)) {
			t.Errorf("FocusFor(%q) = %q matches another spec", name, focus)
		}
	}
}

// BenchmarkRender measures loading a run and rendering its page: the
// recorded fixture, and a run of 150 specs in 4 processes with 5 failures.
func BenchmarkRender(b *testing.B) {
	b.Run("recorded", func(b *testing.B) {
		for b.Loop() {
			run := loadRecorded(b, runOne, RenderOptions{})
			if err := run.HTML(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("150 specs", func(b *testing.B) {
		var specs []*specBuilder
		for i := range 150 {
			s := mkSpec(strings.Repeat("does something worth a long name ", 2)+string(rune('a'+i%26))+string(rune('a'+i/26))).
				at(1+i%4, time.Duration(i)*time.Second, time.Duration(1+i%17)*time.Second)
			if i%30 == 7 {
				s.failed("expected\n    <int>: 1\nto equal\n    <int>: 2")
			}
			specs = append(specs, s)
		}
		run := Build([][]types.Report{{mkSuite(b, 4, specs...)}}, RenderOptions{})
		var page bytes.Buffer
		for b.Loop() {
			page.Reset()
			if err := run.HTML(&page); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(page.Len()), "bytes/page")
	})
}

// TestWriteWithoutWhatItCanDoWithout: an unreadable attempt report or
// summary of the last run costs the page its comparison or the earlier
// attempts, not the page, and the page says what it left out.
func TestWriteWithoutWhatItCanDoWithout(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(runOne)); err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string]string{
		filepath.Join(dir, AttemptsDir, "4242-1.json"): "{not json",
		filepath.Join(dir, OutDir, SummaryFile):        "[]",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Write(dir, RenderOptions{})
	if err != nil {
		t.Fatalf("Write: %v; want the page without the attempts and the comparison", err)
	}
	if w.Run.Verdict != VerdictFailed || len(w.Run.Failures) != 1 {
		t.Errorf("verdict %s with %d failures; want the recorded failure", w.Run.Verdict, len(w.Run.Failures))
	}
	page, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the earlier attempts are left out: ", "4242-1.json", "the last run&#39;s summary is replaced: "} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
