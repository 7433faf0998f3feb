// Package proctest starts child processes for harness tests: each is
// killed, with its process group, when the test ends.
package proctest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/process"
)

// Start starts c as the harness starts its processes (harness/process: in
// a process group of its own) and kills that group when the test ends.
func Start(t testing.TB, c process.Command) *process.Process {
	t.Helper()
	p, err := c.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

// StartReading is Start with c's output to a pipe, and returns the
// process and the first line it printed.
func StartReading(t testing.TB, c process.Command) (*process.Process, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Out = w
	p := Start(t, c)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading %s's output: %v", p.Name(), err)
	}
	return p, strings.TrimSpace(line)
}

// StartHelper starts this test binary again with env (NAME=value) set, for
// a TestMain or init that turns it into a helper process printing a number
// first (a pid, a port), and returns the process and that number.
func StartHelper(t testing.TB, env string) (*process.Process, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, line := StartReading(t, process.Command{Path: self, Env: []string{env}})
	n, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("helper %s printed %q, not a number", env, line)
	}
	return p, n
}
