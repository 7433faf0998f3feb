package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

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

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.WindowSize(viewportWidth, viewportHeight))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()

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
	page := (&url.URL{Scheme: "file", Path: w.Index}).String()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(viewportWidth, viewportHeight), chromedp.Navigate(page)); err != nil {
		t.Fatalf("opening %s in %s: %v", page, chromium, err)
	}

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

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page logged errors:\n  %s", strings.Join(problems, "\n  "))
	}
}
