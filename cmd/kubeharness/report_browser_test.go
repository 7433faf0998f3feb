package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/report"
)

// chromiumEnv names a Chromium (or Chrome) binary for the browser test.
const chromiumEnv = "KUBEHARNESS_CHROMIUM"

// Viewport of the browser test: a laptop's screen.
const viewportWidth, viewportHeight = 1280, 800

// findChromium returns $KUBEHARNESS_CHROMIUM, or the first of chromium,
// chromium-browser and google-chrome on $PATH.
func findChromium() (string, error) {
	if p := os.Getenv(chromiumEnv); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", chromiumEnv, p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", nil
}

// failingSpec is the spec that fails in the run harness/report's tests
// recorded.
const failingSpec = "widgets rejects a <b>huge</b> widget & says why"

// TestReportInBrowser opens the page of a recorded run with one failure in
// headless Chromium, as a person would open it from disk: the failure is
// in the first screenful, its bundle's files open, the timeline has a row
// for each process, the page logs no error, and a screenshot of the first
// screenful lands in artifacts/report-screenshot.png ($ARTIFACTS when set).
func TestReportInBrowser(t *testing.T) {
	chromium, err := findChromium()
	if err != nil {
		t.Fatal(err)
	}
	if chromium == "" {
		t.Skipf("no chromium, chromium-browser or google-chrome on PATH: install one (apt-get install chromium) or set %s to run the browser test", chromiumEnv)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := recordedRun(t)
	w, err := report.Write(dir, report.RenderOptions{SourceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Run.Failures) != 1 {
		t.Fatalf("the recorded run has %d failures, want 1", len(w.Run.Failures))
	}

	ctx, problems := openInChromium(t, chromium, w.Index)

	type box struct{ Top, Bottom, Left, Right float64 }
	type view struct {
		Title    string
		Heading  box
		Message  box
		Rows     int
		Bar      box
		Lane     box
		Links    []string
		Viewport box
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => {
		const card = document.querySelector("#failures ~ article.card");
		const b = (el) => { const r = el.getBoundingClientRect(); return {Top: r.top, Bottom: r.bottom, Left: r.left, Right: r.right}; };
		return {
			Title: card.querySelector("h3").textContent,
			Heading: b(card.querySelector("h3")),
			Message: b(card.querySelector(".message")),
			Rows: document.querySelectorAll("svg.timeline g.row").length,
			Bar: b(document.querySelector("svg.timeline rect.bar")),
			Lane: b(document.querySelector("svg.timeline rect.lane")),
			Links: [...card.querySelectorAll("a.bundle-file")].map((a) => a.href),
			Viewport: {Top: 0, Bottom: window.innerHeight, Left: 0, Right: window.innerWidth},
		};
	})()`))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	if !strings.HasSuffix(got.Title, failingSpec) {
		t.Errorf("the first failure's heading is %q, want the failed spec %q", got.Title, failingSpec)
	}
	within := func(b box) bool {
		return b.Top >= got.Viewport.Top && b.Bottom <= got.Viewport.Bottom && b.Left >= 0 && b.Right <= got.Viewport.Right && b.Bottom > b.Top
	}
	if !within(got.Heading) || !within(got.Message) {
		t.Errorf("the failure is not in the first %dx%d screenful without scrolling: heading %+v, message %+v, viewport %+v",
			viewportWidth, viewportHeight, got.Heading, got.Message, got.Viewport)
	}
	if got.Rows != w.Run.Info.Processes || got.Rows != 2 {
		t.Errorf("the timeline has %d rows, want one per process: %d", got.Rows, w.Run.Info.Processes)
	}

	// A spec's bar fills most of its lane's height: no style of the page
	// reaches into the picture.
	if bar, lane := got.Bar.Bottom-got.Bar.Top, got.Lane.Bottom-got.Lane.Top; bar < 0.6*lane {
		t.Errorf("a timeline bar is %.1f px high in a lane of %.1f px, want most of it", bar, lane)
	}

	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("taking a screenshot: %v", err)
	}
	artifacts := os.Getenv("ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(root, "artifacts")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(artifacts, "report-screenshot.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the first screenful: %s", shotPath)

	// The bundle's events open from the page, as a person clicking the
	// link opens them.
	var events string
	for _, l := range got.Links {
		if strings.HasSuffix(l, "/events.txt") {
			events = l
		}
	}
	if events == "" {
		t.Fatalf("the failure links no events.txt of its bundle: %q", got.Links)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(events)); err != nil {
		t.Fatalf("opening the bundle's %s: %v", events, err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Rejected") || !strings.Contains(text, "Widget/w-1") {
		t.Errorf("the bundle link %s shows %q, want the spec's events", events, text)
	}

	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors:\n  %s", strings.Join(p, "\n  "))
	}
}

// openInChromium opens the page at path (a file) in a headless chromium
// with the test's viewport, and returns the tab and what the page logged
// as errors so far.
func openInChromium(t *testing.T, chromium, path string) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.WindowSize(viewportWidth, viewportHeight))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			what := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				what += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception: %s at %s:%d", what, d.URL, d.LineNumber+1))
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				problems = append(problems, fmt.Sprintf("browser log: %s %s", ev.Entry.Text, ev.Entry.URL))
			}
		}
	}); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	page := (&url.URL{Scheme: "file", Path: path}).String()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(viewportWidth, viewportHeight), chromedp.Navigate(page)); err != nil {
		t.Fatalf("opening %s in %s: %v", page, chromium, err)
	}

	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// TestMergedReportInBrowser opens the page `kubeharness report merge`
// makes of three shards in headless Chromium: the failure comes first,
// with its bundle from its own shard; the timeline has a row per process
// of every shard; each shard's wall is shown; every spec is listed once.
func TestMergedReportInBrowser(t *testing.T) {
	chromium, err := findChromium()
	if err != nil {
		t.Fatal(err)
	}
	if chromium == "" {
		t.Skipf("no chromium, chromium-browser or google-chrome on PATH: install one (apt-get install chromium) or set %s to run the browser test", chromiumEnv)
	}
	base := t.TempDir()
	start := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	names := []string{"publishes a notice", "defaults a message", "denies a long message", "collects what a notice owns", "deletes a namespace", "rejects a bad ratio"}
	failing := "denies a long message"
	var dirs []string
	for shard := range 3 {
		dir := filepath.Join(base, fmt.Sprintf("shard-%d", shard+1))
		r := types.Report{SuitePath: "/src/e2e", SuiteDescription: "notices", SuiteSucceeded: true, StartTime: start,
			SuiteConfig: types.SuiteConfig{ParallelTotal: 2}}
		for i, name := range names {
			sr := types.SpecReport{ContainerHierarchyTexts: []string{"Notice"}, LeafNodeType: types.NodeTypeIt, LeafNodeText: name,
				LeafNodeLocation: types.CodeLocation{FileName: "/src/e2e/notice_test.go", LineNumber: 10 + i}, State: types.SpecStateSkipped}
			if i%3 == shard {
				began := start.Add(time.Duration(1+i) * time.Second)
				sr.State, sr.ParallelProcess, sr.StartTime, sr.EndTime, sr.RunTime = types.SpecStatePassed, 1+i%2, began, began.Add(2*time.Second), 2*time.Second
				if name == failing {
					sr.State = types.SpecStateFailed
					sr.Failure = types.Failure{Message: "message over 280 characters admitted", FailureNodeType: types.NodeTypeIt,
						Location: types.CodeLocation{FileName: "/src/e2e/notice_test.go", LineNumber: 12}}
					r.SuiteSucceeded = false
				}
			}
			r.SpecReports = append(r.SpecReports, sr)
		}
		r.EndTime = start.Add(time.Duration(9+shard) * time.Second)
		data, err := json.Marshal([]types.Report{r})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, report.JSONReportFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	b := bundle.Dir(dirs[2], "Notice "+failing)
	if err := os.MkdirAll(b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "events.txt"), []byte("Warning Rejected Notice/long\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := report.Merge(dirs, report.RenderOptions{OutDir: filepath.Join(base, "merged")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, problems := openInChromium(t, chromium, w.Index)
	type view struct {
		Title   string
		Rows    int
		Shards  []string
		Links   []string
		Page    string
		Heading float64
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => {
		const card = document.querySelector("#failures ~ article.card");
		return {
			Title: card.querySelector("h3").textContent,
			Rows: document.querySelectorAll("svg.timeline g.row").length,
			Shards: [...document.querySelectorAll(".shards span")].map((s) => s.textContent),
			Links: [...card.querySelectorAll("a.bundle-file")].map((a) => a.href),
			Page: document.body.innerText,
			Heading: card.querySelector("h3").getBoundingClientRect().top,
		};
	})()`))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	if !strings.HasSuffix(got.Title, failing) || got.Heading > viewportHeight {
		t.Errorf("the first failure is %q at %.0f px; want %q in the first screenful", got.Title, got.Heading, failing)
	}
	if got.Rows != 6 {
		t.Errorf("the timeline has %d rows, want 6: two processes in each of three shards", got.Rows)
	}
	if len(got.Shards) != 3 || !strings.Contains(got.Shards[2], "shard 3 of 3") || !strings.Contains(got.Shards[2], "1 failed") {
		t.Errorf("shard walls %q, want three, the third with its failure", got.Shards)
	}
	if len(got.Links) == 0 || !strings.Contains(got.Links[0], "shard-3") {
		t.Errorf("the failure's bundle links %q, want shard 3's", got.Links)
	}
	if w.Run.Counts.Specs != len(names) || w.Run.Counts.Failed != 1 || w.Run.Counts.Passed != len(names)-1 {
		t.Errorf("counts %+v, want each of %d specs once", w.Run.Counts, len(names))
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors:\n  %s", strings.Join(p, "\n  "))
	}
}

// TestCoverageReportInBrowser opens the page of a recorded run with its
// coverage (harness/report's testdata/coverage: a per-spec record and the
// run's merged profile) in headless Chromium: the coverage section shows
// the package's percent, the unreached lines with their source once
// opened, and each spec with the files it reached, linked to its row in
// the list of every spec, which a click opens and scrolls to.
func TestCoverageReportInBrowser(t *testing.T) {
	chromium, err := findChromium()
	if err != nil {
		t.Fatal(err)
	}
	if chromium == "" {
		t.Skipf("no chromium, chromium-browser or google-chrome on PATH: install one (apt-get install chromium) or set %s to run the browser test", chromiumEnv)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the report reads the per-spec record with go tool covdata: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := recordedRun(t)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "harness", "report", "testdata", "coverage"))); err != nil {
		t.Fatal(err)
	}
	w, err := report.Write(dir, report.RenderOptions{SourceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	ctx, problems := openInChromium(t, chromium, w.Index)

	type view struct {
		Heading  string
		Packages []string
		Unseen   bool // an unreached line visible before its details open
		Seen     bool
		Source   string
		Specs    int
		Files    []string
		Target   string
		Row      struct{ Top, Bottom float64 }
		Open     bool
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => {
		const h = document.querySelector("h2#coverage");
		const unreached = document.querySelector("details.cov-unreached");
		const line = unreached.querySelector("tr.miss");
		const unseen = line.checkVisibility();
		unreached.open = true;
		const seen = line.checkVisibility();
		const specs = document.querySelector("details.cov-specs");
		specs.open = true;
		const rows = [...specs.querySelectorAll("tr.cov-spec")];
		const link = rows[0].querySelector("a");
		const target = link.getAttribute("href");
		link.click();
		const row = document.getElementById(target.slice(1));
		const r = row.getBoundingClientRect();
		return {
			Heading: h.textContent,
			Packages: [...document.querySelectorAll("table.cov-packages tr td:first-child")].map((td) => td.textContent + " " + td.parentElement.children[2].textContent),
			Unseen: unseen, Seen: seen,
			Source: unreached.innerText,
			Specs: rows.length,
			Files: rows.map((tr) => tr.children[1].textContent),
			Target: target,
			Row: {Top: r.top, Bottom: r.bottom},
			Open: row.closest("details").open,
		};
	})()`))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	if !strings.HasPrefix(got.Heading, "Coverage") || !strings.Contains(got.Heading, "% of ") {
		t.Errorf("the coverage heading is %q, want the run's percent of statements", got.Heading)
	}
	const pkg = "github.com/kubeharness/kubeharness/harness/report/testdata/covsrc"
	if len(got.Packages) != 1 || !strings.HasPrefix(got.Packages[0], pkg+" ") || !strings.HasSuffix(got.Packages[0], "%") {
		t.Errorf("the packages are %q, want %s with its percent", got.Packages, pkg)
	}
	if got.Unseen || !got.Seen {
		t.Errorf("an unreached line is visible with its details closed: %v, open: %v; want hidden, then shown", got.Unseen, got.Seen)
	}
	if !strings.Contains(got.Source, `fmt.Println("refusing to resize", name, "to nothing")`) || !strings.Contains(got.Source, "harness/report/testdata/covsrc/widgets.go") {
		t.Errorf("the unreached lines do not show resize's source:\n%s", got.Source)
	}
	if got.Specs != 5 {
		t.Errorf("%d specs with the files they reached, want the 5 that ran", got.Specs)
	}
	for _, f := range got.Files {
		if f != "harness/report/testdata/covsrc/widgets.go" {
			t.Errorf("a spec reached %q, want the fixture's widgets.go", f)
		}
	}
	if !strings.HasPrefix(got.Target, "#row-") || !got.Open || got.Row.Bottom <= got.Row.Top || got.Row.Top < 0 || got.Row.Bottom > viewportHeight {
		t.Errorf("following a spec's link (%s) leaves its row at %+v, its list open: %v; want it open and in view", got.Target, got.Row, got.Open)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors:\n  %s", strings.Join(p, "\n  "))
	}
}
