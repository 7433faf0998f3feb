package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	report := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1">
  <testsuite name="kubeharness e2e" tests="3" failures="1" errors="0" skipped="1" time="12.5">
    <testcase name="[It] Playbook trims the abstract"></testcase>
    <testcase name="[It] metrics skipped"><skipped message="skipped"/></testcase>
    <testcase name="[It] leader hands over"><failure message="no new leader within 15s" type="failed">details</failure></testcase>
  </testsuite>
</testsuites>`
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := summarize(&out, path); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"### ❌ kubeharness e2e", "| 3 | 1 | 1 | 1 | 12.5 |", "❌ [It] leader hands over", "no new leader within 15s"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "trims the abstract") {
		t.Errorf("summary lists a passed spec:\n%s", got)
	}
}

func TestSummarizeRefusesWhatIsNotAReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := summarize(&bytes.Buffer{}, path); err == nil {
		t.Fatal("a file without test suites must be an error, or a run without a report looks green")
	}
}
