package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":    formatDuration,
	"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"size":   formatSize,
	"short":  shortCommit,
	"offset": func(d time.Duration) string { return "+" + formatDuration(d) },
	"pct": func(part, whole time.Duration) string {
		if whole <= 0 {
			return "0"
		}
		return fmt.Sprintf("%.2f", 100*float64(part)/float64(whole))
	},
	"f1":     func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"states": formatStates,
}).Parse(pageTemplate))

// HTML writes the run's page: one self-contained HTML file (inline CSS and
// SVG, a few lines of script to copy a command) whose links to bundle
// files are relative to the directory it is written to.
func (r *Run) HTML(w io.Writer) error {
	v := pageView{Run: r, Headline: headline(r)}
	for _, tl := range r.Timelines {
		v.Timelines = append(v.Timelines, layoutTimeline(tl, len(v.Timelines)))
	}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("rendering the report: %w", err)
	}
	return nil
}

type pageView struct {
	*Run
	Headline  string
	Timelines []timelineView
}

// headline says in a line what the verdict rests on.
func headline(r *Run) string {
	c := r.Counts
	var parts []string
	switch {
	case r.Verdict == VerdictPassed:
		what := fmt.Sprintf("%d specs passed", c.Passed+c.Flaky)
		if c.Flaky > 0 {
			what += fmt.Sprintf(", %d of them only when retried", c.Flaky)
		}
		if c.Skipped > 0 {
			what += fmt.Sprintf(", %d skipped", c.Skipped)
		}
		parts = append(parts, what)
	case len(r.Failures) > 0:
		first := r.Failures[0]
		what := fmt.Sprintf("%d of %d specs failed", c.Failed, c.Specs)
		if first.IsSuiteNode() {
			what = first.Name + " failed"
			if c.Failed > 1 {
				what += fmt.Sprintf(", %d failures in all", c.Failed)
			}
		}
		parts = append(parts, what)
	default:
		parts = append(parts, "the suite failed")
	}
	if r.Attempts > 1 {
		parts = append(parts, fmt.Sprintf("attempt %d of a repeated run", r.Attempts))
	}
	return strings.Join(parts, " · ")
}

// Href links to s on the page: its card when it failed or is flaky, else
// its row in the list of all specs.
func (s *Spec) Href() string {
	if s.Outcome == Failed || s.Flaky {
		return "#" + s.ID
	}
	return "#row-" + s.ID
}

// Shown is the number of lines of the excerpt.
func (e Excerpt) Shown() int { return e.Lines - e.Omitted }

// Timeline layout, in SVG user units.
const (
	tlLabel = 86
	tlPlot  = 1000
	tlRight = 14
	tlTop   = 22
	tlRow   = 26
	tlBar   = 18
)

type timelineView struct {
	Suite         string
	Width, Height int
	Pattern       string
	Rows          []timelineRow
	Ticks         []timelineTick
	Total         time.Duration
}

type timelineRow struct {
	Process int
	Y       int
	Bars    []timelineBar
}

type timelineBar struct {
	X, W   float64
	Y      int
	Class  string
	Title  string
	Href   string
	Serial bool
}

type timelineTick struct {
	X     float64
	Label string
}

func layoutTimeline(tl Timeline, n int) timelineView {
	total := tl.End.Sub(tl.Start)
	v := timelineView{Suite: tl.Suite, Width: tlLabel + tlPlot + tlRight, Height: tlTop + len(tl.Processes)*tlRow + 4,
		Pattern: fmt.Sprintf("serial-%d", n), Total: total}
	x := func(t time.Time) float64 {
		if total <= 0 {
			return tlLabel
		}
		f := float64(t.Sub(tl.Start)) / float64(total)
		return tlLabel + tlPlot*math.Max(0, math.Min(1, f))
	}
	if total > 0 {
		step := tickStep(total)
		for d := time.Duration(0); d <= total; d += step {
			v.Ticks = append(v.Ticks, timelineTick{X: x(tl.Start.Add(d)), Label: formatDuration(d)})
		}
	}
	row := map[int]int{}
	for i, p := range tl.Processes {
		row[p] = i
		v.Rows = append(v.Rows, timelineRow{Process: p, Y: tlTop + i*tlRow})
	}
	for _, s := range tl.Specs {
		i, ok := row[s.Process]
		if !ok {
			continue
		}
		b := timelineBar{X: x(s.Start), Y: v.Rows[i].Y + (tlRow-tlBar)/2, Href: s.Href(), Serial: s.Serial}
		b.W = math.Max(x(s.End)-b.X, 1.5)
		switch {
		case s.IsSetup():
			b.Class = "setup"
		case s.IsSuiteNode():
			b.Class = "teardown"
		default:
			b.Class = string(s.Outcome)
		}
		if s.IsSuiteNode() && s.Outcome == Failed {
			b.Class = "failed"
		}
		b.Title = fmt.Sprintf("%s — %s, %s, process %d", s.Name, s.Outcome, formatDuration(s.RunTime), s.Process)
		if s.Serial {
			b.Title += ", Serial"
		}
		v.Rows[i].Bars = append(v.Rows[i].Bars, b)
	}
	return v
}

// tickStep is a round step that puts 5 to 10 ticks on total.
func tickStep(total time.Duration) time.Duration {
	steps := []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
		20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}
	for _, s := range steps {
		if total/s <= 10 {
			return s
		}
	}
	return total / 10
}

// formatDuration is a duration as a person reads it: 850ms, 12.3s, 4m05s.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func formatSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

func shortCommit(c string) string {
	if len(c) > 12 && !strings.ContainsAny(c, " -") {
		return c[:12]
	}
	return c
}

// formatStates is a spec's outcome in each attempt: "passed, failed".
func formatStates(s *Spec) string {
	var parts []string
	for _, st := range s.Attempts {
		parts = append(parts, st.String())
	}
	return strings.Join(parts, ", ")
}

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the run's summary: %w", err)
	}
	return append(data, '\n'), nil
}
