package process_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/process"
)

func TestAliveSaysNoToAZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	// Unreaped until the deferred Wait: a zombie once it has exited.
	if !process.WaitGone(cmd.Process.Pid, 10*time.Second) {
		t.Errorf("the exited, unreaped true (pid %d) is alive", cmd.Process.Pid)
	}
}

func TestOwnedAndRuns(t *testing.T) {
	const mark = "KUBEHARNESS_TEST_MARK=a"
	marked := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}, Mark: mark})
	other := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}, Mark: "KUBEHARNESS_TEST_MARK=b"})
	if !process.Owned(marked.Pid(), mark) || process.Owned(other.Pid(), mark) || process.Owned(marked.Pid(), "") {
		t.Errorf("Owned: the marked sleep %v, the other %v, no mark %v",
			process.Owned(marked.Pid(), mark), process.Owned(other.Pid(), mark), process.Owned(marked.Pid(), ""))
	}
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	if !process.Runs(marked.Pid(), exe) || !process.Runs(marked.Pid(), "") || process.Runs(marked.Pid(), "/bin/other") {
		t.Errorf("Runs(%d, %s) is wrong", marked.Pid(), exe)
	}
	_ = marked.Kill()
	if process.Owned(marked.Pid(), mark) || process.Runs(marked.Pid(), exe) {
		t.Error("a killed process is still owned or runs")
	}
}

// StopOwned stops the marked process, and leaves alone one without the
// mark in its pid's place.
func TestStopOwned(t *testing.T) {
	const mark = "KUBEHARNESS_TEST_MARK=stop"
	marked := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}, Mark: mark})
	stranger := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}})
	if err := process.StopOwned(stranger.Pid(), mark, time.Second); err != nil || !process.Alive(stranger.Pid()) {
		t.Errorf("StopOwned of an unmarked process: %v, alive %v; want it left alone", err, process.Alive(stranger.Pid()))
	}
	if err := process.StopOwned(marked.Pid(), mark, 10*time.Second); err != nil {
		t.Errorf("StopOwned: %v", err)
	}
	select {
	case <-marked.Done():
	case <-time.After(10 * time.Second):
		t.Error("the marked sleep still runs after StopOwned")
	}
}
