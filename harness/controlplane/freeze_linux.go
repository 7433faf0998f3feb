package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// canFreeze says whether a start can copy etcd's data while etcd is
// stopped by SIGSTOP (stopped): here it can.
const canFreeze = true

// stopped returns once every thread of pid is stopped (SIGSTOP sent), as
// /proc says, or an error after timeout.
func stopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tasks := filepath.Join("/proc", strconv.Itoa(pid), "task")
	for {
		all, err := allStopped(tasks)
		if err != nil {
			return err
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %s of SIGSTOP", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// allStopped reports whether each thread in tasks (/proc/PID/task) is in
// the stopped state.
func allStopped(tasks string) (bool, error) {
	entries, err := os.ReadDir(tasks)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
		if err != nil {
			return false, err
		}
		// "tid (comm) S ...": the state follows the last parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("%s: unexpected %q", filepath.Join(tasks, e.Name(), "stat"), stat)
		}
		if s := stat[i+2]; s != 'T' && s != 't' {
			return false, nil
		}
	}
	return true, nil
}
