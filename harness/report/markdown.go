package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
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
	if cov := r.Coverage; cov != nil && cov.Statements > 0 {
		info = append(info, fmt.Sprintf("coverage %s of %d statements", cov.Percent(), cov.Statements))
	}
	if len(info) > 0 {
		fmt.Fprintf(&b, "%s\n\n", strings.Join(info, " · "))
	}
	for _, reason := range r.Reasons {
		lines := firstLines(reason, 20)
		if len(lines) == 1 {
			fmt.Fprintf(&b, "> %s\n\n", mdEscape(reason))
			continue
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
			fmt.Fprintf(&b, "%s\n", fence(strings.Join(firstLines(s.Failure.Message, 12), "\n")))
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

// A run's report is data, and what it names (a spec's name, a failure's
// location, a report entry) could hold a newline, a carriage return or a
// backtick to end the inline code or the line it is put in and start
// Markdown or HTML of its own in the job summary. So each such text is
// made one line (oneLine) of at most mdMaxLen bytes before it is escaped
// or put in code; code blocks get their lines made lines and cut alike.
const mdMaxLen = 500

// mdEscape keeps text from being read as Markdown or HTML, on one line.
func mdEscape(s string) string {
	var b strings.Builder
	for _, c := range oneLine(s, asText) {
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
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// htmlEscape is for text inside HTML tags of the Markdown (summary), on
// one line.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(oneLine(s, asText))
}

// mdCode is s as inline code, on one line (control characters written
// as escapes, \n), fenced with more backticks than s holds in a row, so
// that nothing in it closes the span.
func mdCode(s string) string {
	s = oneLine(s, asCode)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// firstLines are the first n lines of s, trimmed (a carriage return ends
// a line too), and "…" when there are more.
func firstLines(s string, n int) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return lines
}

// fence is s as a code block, fenced with more backticks than s holds in
// a row; its lines (a carriage return ends one too) are cut to mdMaxLen
// bytes and hold no control character but a tab (oneLine's asCodeLine).
func fence(s string) string {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
	for i, l := range lines {
		lines[i] = oneLine(l, asCodeLine)
	}
	s = strings.Join(lines, "\n")
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + "\n" + s + "\n" + f
}

// How oneLine writes a control character.
type lineMode int

const (
	asText     lineMode = iota // as a space
	asCode                     // as an escape, as in a Go string: "\n", "\x1b", "\u2028"
	asCodeLine                 // as asCode, but a tab stays
)

// oneLine is s without control characters, of at most mdMaxLen bytes
// (and a "…" where its middle was left out, not inside a character): each C0 or C1 control character,
// DEL and the Unicode line and paragraph separators are written as mode
// says.
func oneLine(s string, mode lineMode) string {
	if len(s) > mdMaxLen {
		// Its start and its end (a location's line number), without
		// the middle.
		head, tail := mdMaxLen/2, len(s)-mdMaxLen/2
		for head > 0 && !utf8.RuneStart(s[head]) {
			head--
		}
		for tail < len(s) && !utf8.RuneStart(s[tail]) {
			tail++
		}
		s = s[:head] + "…" + s[tail:]
	}
	var b strings.Builder
	for _, c := range s {
		switch {
		case !isControl(c), c == '\t' && mode == asCodeLine:
			b.WriteRune(c)
		case mode == asText:
			b.WriteByte(' ')
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x100:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}

// isControl reports whether c is a C0 or C1 control character, DEL, or a
// Unicode line or paragraph separator.
func isControl(c rune) bool {
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '\u2028' || c == '\u2029'
}
