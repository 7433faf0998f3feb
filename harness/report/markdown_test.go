package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// TestMarkdownKeepsReportTextInItsPlace: what a run's report names (a
// spec's name, a failure's location, a report entry, a failure message)
// cannot end the inline code, line or HTML it is put in and start
// Markdown of its own in the job summary: control characters are written
// as escapes or spaces, backticks do not close a span, and each text is
// cut to mdMaxLen bytes.
func TestMarkdownKeepsReportTextInItsPlace(t *testing.T) {
	const injected = "INJECTED"
	b := mkSpec("widgets\r\n# " + injected + " heading from the name\r<img src=x onerror=alert(1)>").failed("boom\r# " + injected + " from the message\n```\n# " + injected + " after a fence")
	b.r.Failure.Location = types.CodeLocation{
		FileName:   "e2e/a_test.go\n\n# " + injected + " heading\n`` ` <img src=x>\r\u2028\u0085" + strings.Repeat("long", 1000) + "END",
		LineNumber: 7,
	}
	b.entry(CommitEntry, "abc`\n\n# "+injected+" from the commit\t`")
	run := Build([][]types.Report{{mkSuite(t, 1, b)}}, RenderOptions{})
	run.Failures[0].Rerun = "make e2e FOCUS='x'\n# " + injected + " from the rerun"
	var md bytes.Buffer
	if err := run.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	fence := "" // of the code block the line is in
	for i, line := range strings.Split(out, "\n") {
		if strings.Trim(line, "`") == "" && len(line) >= 3 && len(line) >= len(fence) {
			if fence == "" {
				fence = line
			} else {
				fence = ""
			}
			continue
		}
		if fence == "" && (strings.HasPrefix(line, "# ") || strings.Contains(outsideCode(line), "<img")) {
			t.Errorf("line %d is Markdown or HTML of the report's own: %q", i+1, line)
		}
		if strings.ContainsAny(line, "\r\u2028\u0085") {
			t.Errorf("line %d holds a control character or line separator: %q", i+1, line)
		}
		if len(line) > 2*mdMaxLen {
			t.Errorf("line %d is %d bytes long; want the report's text in it cut at %d", i+1, len(line), mdMaxLen)
		}
	}
	if fence != "" {
		t.Error("a code block is left open")
	}
	for _, want := range []string{
		// The location, all on its line and in one span of its own
		// fence (three backticks: it holds two in a row).
		"at ```e2e/a_test.go\\n\\n# " + injected + " heading\\n`` ` <img src=x>\\r\\u2028\\x85long",
		"…",
		"longEND:7```\n",
		"commit `` abc`\\n\\n# " + injected + " from the commit\\t` ``",
		"run it again: `make e2e FOCUS='x'\\n# " + injected + " from the rerun`",
		"<summary>❌ widgets widgets  # " + injected + " heading from the name &lt;img src=x onerror=alert(1)&gt;</summary>",
		// A message's own fence is longer than any backticks in it.
		"````\nboom\n# " + injected + " from the message\n```\n# " + injected + " after a fence\n````",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

// outsideCode is line without its inline code spans: each run of
// backticks up to the next run of as many, as CommonMark reads them.
func outsideCode(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			return b.String() + line
		}
		b.WriteString(line[:i])
		n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
		open, rest := line[i:i+n], line[i+n:]
		end := -1
		for j := 0; j < len(rest); {
			k := strings.IndexByte(rest[j:], '`')
			if k < 0 {
				break
			}
			m := len(rest[j+k:]) - len(strings.TrimLeft(rest[j+k:], "`"))
			if m == n {
				end = j + k
				break
			}
			j += k + m
		}
		if end < 0 {
			return b.String() + open + rest // no span: the backticks are text
		}
		line = rest[end+n:]
	}
}
