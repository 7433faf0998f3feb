package main

import (
	"strings"
	"testing"
)

func TestParseBenchOnly(t *testing.T) {
	run, err := parseBenchOnly("")
	if err != nil || !run["start"] || !run["cycles"] || !run["env"] || !run["suite"] {
		t.Errorf("no --only: %v, %v; want every section", run, err)
	}
	run, err = parseBenchOnly("cycles,suite")
	if err != nil || run["start"] || !run["cycles"] || run["env"] || !run["suite"] {
		t.Errorf("--only=cycles,suite: %v, %v", run, err)
	}
	for _, args := range [][]string{{"bench", "--only=cycles,bogus"}, {"bench", "--cycles=-1"}} {
		out, errOut, code := kubeharness(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "kubeharness bench: "+args[1]) {
			t.Errorf("kubeharness %q: exit status %d, stdout %q, stderr %q; want 2 and a usage error", args, code, out, errOut)
		}
	}
}
