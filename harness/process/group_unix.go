//go:build unix

package process

import (
	"errors"
	"syscall"
)

// killGroup sends sig to the process's group; a group that is gone is no
// error.
func (p *Process) killGroup(sig syscall.Signal) error {
	if err := syscall.Kill(-p.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// continueGroup sends SIGCONT to the process's group, so that a paused
// process acts on the SIGTERM before it.
func (p *Process) continueGroup() { _ = p.killGroup(syscall.SIGCONT) }

// signalPid sends sig to pid alone.
func signalPid(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// continuePid sends SIGCONT to pid, so that a paused process acts on the
// SIGTERM before it.
func continuePid(pid int) { _ = syscall.Kill(pid, syscall.SIGCONT) }
