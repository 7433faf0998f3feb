package report

import (
	"fmt"
	"io"
	"strings"
)

// Markdown writes the run's summary as GitHub-flavoured Markdown, for a
// job summary ($GITHUB_STEP_SUMMARY): the verdict and counts, each failure
// with its message and location, the flaky specs and the slowest five.
func (r *Run) Markdown(w io.Writer) error {
	var b strings.Builder
	icon, verdict := "✅", "passed"
	if r.Verdict == VerdictFailed {
		icon, verdict = "❌", "FAILED"
	} else if r.Counts.Flaky > 0 {
		icon = "⚠️"
	}
	fmt.Fprintf(&b, "### %s %s: %s\n\n", icon, mdEscape(strings.Join(r.Suites, ", ")), verdict)
	fmt.Fprintf(&b, "%s\n\n", mdEscape(headline(r)))
	c := r.Counts
	fmt.Fprintf(&b, "| specs | passed | failed | flaky | skipped | wall |\n|---:|---:|---:|---:|---:|---:|\n| %d | %d | %d | %d | %d | %s |\n\n",
		c.Specs, c.Passed, c.Failed, c.Flaky, c.Skipped, formatDuration(r.Wall.Total))
	if len(r.Shards) > 0 {
		b.WriteString("| shard | wall | ran | failed |\n|---|---:|---:|---:|\n")
		for _, sh := range r.Shards {
			fmt.Fprintf(&b, "| %s | %s | %d | %d |\n", mdEscape(sh.Name), formatDuration(sh.Wall), sh.Ran, sh.Failed)
		}
		b.WriteString("\n")
	}
	var info []string
	for _, kv := range [][2]string{{"Kubernetes", r.Info.KubernetesVersion}, {"provider", r.Info.Provider},
		{"processes", fmt.Sprint(r.Info.Processes)}, {"commit", shortCommit(r.Info.Commit)}, {"machine", r.Info.Machine}} {
		if kv[1] != "" {
			info = append(info, kv[0]+" "+mdCode(kv[1]))
		}
	}
	if len(info) > 0 {
		fmt.Fprintf(&b, "%s\n\n", strings.Join(info, " · "))
	}
	for _, reason := range r.Reasons {
		lines := strings.Split(strings.TrimSpace(reason), "\n")
		if len(lines) == 1 {
			fmt.Fprintf(&b, "> %s\n\n", mdEscape(reason))
			continue
		}
		if len(lines) > 20 {
			lines = append(lines[:20], "…")
		}
		fmt.Fprintf(&b, "%s\n\n", fence(strings.Join(lines, "\n")))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "> ⚠️ %s\n\n", mdEscape(w))
	}
	for _, s := range r.Failures {
		loc := ""
		if s.Failure != nil {
			loc = fmt.Sprintf("%s:%d", s.Failure.Location.FileName, s.Failure.Location.LineNumber)
			if s.Source != nil {
				loc = fmt.Sprintf("%s:%d", s.Source.File, s.Source.Line)
			}
		}
		flaky := ""
		if s.Flaky {
			flaky = " (flaky: " + formatStates(s) + ")"
		}
		fmt.Fprintf(&b, "<details><summary>❌ %s%s</summary>\n\n", htmlEscape(s.Name), htmlEscape(flaky))
		if loc != "" {
			fmt.Fprintf(&b, "at %s\n\n", mdCode(loc))
		}
		if s.Failure != nil {
			lines := strings.Split(strings.TrimSpace(s.Failure.Message), "\n")
			if len(lines) > 12 {
				lines = append(lines[:12], "…")
			}
			fmt.Fprintf(&b, "%s\n", fence(strings.Join(lines, "\n")))
		}
		if s.Rerun != "" {
			fmt.Fprintf(&b, "\nrun it again: %s\n", mdCode(s.Rerun))
		}
		b.WriteString("</details>\n\n")
	}
	var flakes []string
	for _, s := range r.Flakes {
		if s.Outcome != Failed {
			how := fmt.Sprintf("%d tries", s.Tries)
			if len(s.Attempts) > 1 {
				how = "attempts: " + formatStates(s)
			}
			flakes = append(flakes, fmt.Sprintf("- ⚠️ %s (%s)", mdEscape(s.Name), how))
		}
	}
	if len(flakes) > 0 {
		fmt.Fprintf(&b, "**Flaky**: passed only when retried\n\n%s\n\n", strings.Join(flakes, "\n"))
	}
	if len(r.Slowest) > 0 {
		b.WriteString("**Slowest specs**\n\n| took | spec |\n|---:|---|\n")
		for _, s := range r.Slowest[:min(5, len(r.Slowest))] {
			fmt.Fprintf(&b, "| %s | %s |\n", formatDuration(s.RunTime), mdEscape(s.Name))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps text from being read as Markdown or HTML.
func mdEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\n':
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// htmlEscape is for text inside HTML tags of the Markdown (summary).
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}

// mdCode is s as inline code, fenced with more backticks than s holds.
func mdCode(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// fence is s as a code block, fenced with more backticks than s holds in
// a row.
func fence(s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + "\n" + s + "\n" + f
}
