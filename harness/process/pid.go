package process

import (
	"fmt"
	"syscall"
	"time"
)

// pidPollInterval is how often WaitGone looks.
const pidPollInterval = 50 * time.Millisecond

// killWait bounds how long StopOwned waits for a process after SIGKILL.
const killWait = 5 * time.Second

// WaitGone waits up to timeout for pid to be gone (not Alive) and reports
// whether it is.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return true
		}
		time.Sleep(pidPollInterval) // polling the process table: nothing to wait on for a process not ours to reap
	}
	return !Alive(pid)
}

// StopOwned stops pid when it is Owned under mark (a process this one did
// not start, or started and can no longer reap, such as one a crashed
// supervisor left): SIGTERM, and SIGCONT so that a paused one acts on it;
// up to grace for it to go; then, if it is still the one marked, SIGKILL
// and up to 5 s more. It signals nothing that does not carry the mark, so
// a pid reused by another process is safe. It returns an error when the
// process is still there at the end.
func StopOwned(pid int, mark string, grace time.Duration) error {
	if !Owned(pid, mark) {
		return nil
	}
	_ = signalPid(pid, syscall.SIGTERM)
	continuePid(pid)
	if WaitGone(pid, grace) || !Owned(pid, mark) {
		return nil
	}
	_ = signalPid(pid, syscall.SIGKILL)
	if !WaitGone(pid, killWait) {
		return fmt.Errorf("pid %d (marked %s) is still there %s after SIGKILL", pid, mark, killWait)
	}
	return nil
}
