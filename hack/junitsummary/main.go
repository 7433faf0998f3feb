// Command junitsummary turns Ginkgo's JUnit reports into a Markdown summary,
// for GitHub Actions' job summary:
//
//	go run ./hack/junitsummary artifacts/junit.xml >> "$GITHUB_STEP_SUMMARY"
//
// It lists the counts and every failed spec with the first lines of its
// failure. A report that cannot be read is an error, so a run that produced
// no report does not look green.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
)

type suites struct {
	Suites []suite `xml:"testsuite"`
}

type suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	Cases    []struct {
		Name    string `xml:"name,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Error *struct {
			Message string `xml:"message,attr"`
		} `xml:"error"`
	} `xml:"testcase"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: junitsummary REPORT.xml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := summarize(os.Stdout, path); err != nil {
			fmt.Fprintf(os.Stderr, "junitsummary: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func summarize(w io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s suites
	if err := xml.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("not a JUnit report: %w", err)
	}
	if len(s.Suites) == 0 {
		return fmt.Errorf("no test suites in the report")
	}
	for _, su := range s.Suites {
		failed := su.Failures + su.Errors
		icon := "✅"
		if failed > 0 {
			icon = "❌"
		}
		fmt.Fprintf(w, "### %s %s\n\n", icon, su.Name)
		fmt.Fprintf(w, "| specs | passed | failed | skipped | seconds |\n|---|---|---|---|---|\n| %d | %d | %d | %d | %s |\n\n",
			su.Tests, su.Tests-failed-su.Skipped, failed, su.Skipped, su.Time)
		for _, c := range su.Cases {
			msg := ""
			switch {
			case c.Failure != nil:
				msg = c.Failure.Message
				if msg == "" {
					msg = c.Failure.Text
				}
			case c.Error != nil:
				msg = c.Error.Message
			default:
				continue
			}
			lines := strings.Split(strings.TrimSpace(msg), "\n")
			if len(lines) > 8 {
				lines = append(lines[:8], "…")
			}
			fmt.Fprintf(w, "<details><summary>❌ %s</summary>\n\n```\n%s\n```\n</details>\n\n", c.Name, strings.Join(lines, "\n"))
		}
	}
	return nil
}
