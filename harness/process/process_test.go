package process_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/process"
)

// helperEnv turns the test binary into one of helpers, by name: a child
// or a parent that a test starts (proctest.StartHelper) and kills.
const helperEnv = "KUBEHARNESS_TEST_PROCESS_HELPER"

// helpers are what the test binary can be instead, by helperEnv's value.
// Each prints a line first (a pid, pids) unless it exits at once.
var helpers = map[string]func(){
	// block prints its pid and waits to be killed.
	"block": func() {
		fmt.Println(os.Getpid())
		for {
			time.Sleep(time.Hour) // until the test ends it
		}
	},
	// exit writes to both streams and exits with status 3.
	"exit": func() {
		fmt.Println("out")
		fmt.Fprintln(os.Stderr, "err")
		os.Exit(3)
	},
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		helper, ok := helpers[name]
		if !ok {
			fmt.Printf("no helper %q\n", name)
			os.Exit(2)
		}
		helper()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// self is this test binary, for commands that run a helper.
func self(t *testing.T) string {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Start, Wait, Stop and Kill work on every system, Windows included: the
// child is this test binary, which every system can run.
func TestStartStopAndKillAnywhere(t *testing.T) {
	var out bytes.Buffer
	exit := proctest.Start(t, process.Command{Path: self(t), Name: "the helper", Out: &out, Env: []string{helperEnv + "=exit"}})
	err := exit.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 || !strings.HasPrefix(err.Error(), "the helper (") {
		t.Errorf("Wait: %v; want the helper's exit status 3, named", err)
	}
	if got := strings.ReplaceAll(out.String(), "\r\n", "\n"); got != "out\nerr\n" {
		t.Errorf("output %q; want both streams", got)
	}

	for _, end := range []struct {
		name string
		do   func(*process.Process) error
	}{
		{"Stop", func(p *process.Process) error { return p.Stop(time.Minute) }},
		{"Kill", (*process.Process).Kill},
	} {
		p, pid := proctest.StartHelper(t, helperEnv+"=block")
		if pid != p.Pid() || !process.Alive(pid) {
			t.Fatalf("the helper says pid %d, Pid %d, alive %v", pid, p.Pid(), process.Alive(pid))
		}
		if err := end.do(p); err != nil {
			t.Errorf("%s: %v", end.name, err)
		}
		if p.State() == nil || process.Alive(pid) {
			t.Errorf("after %s the helper (pid %d) has state %v, alive %v", end.name, pid, p.State(), process.Alive(pid))
		}
	}
}
