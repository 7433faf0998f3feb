package process

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// killGroup ends the process itself for SIGKILL and SIGTERM
// (TerminateProcess, through the handle Start holds, so a reused pid is
// safe): Windows has neither process groups to signal nor signals, and
// refuses anything else.
func (p *Process) killGroup(sig syscall.Signal) error {
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return errNoSignal(sig)
	}
	if err := p.exec.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// continueGroup does nothing: no process is paused on Windows.
func (p *Process) continueGroup() {}

// signalPid ends pid for SIGKILL and SIGTERM (TerminateProcess) and
// refuses anything else.
func signalPid(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return errNoSignal(sig)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer proc.Release()
	return proc.Kill()
}

// continuePid does nothing: no process is paused on Windows.
func continuePid(int) {}

// errNoSignal says that sig takes a Unix system.
func errNoSignal(sig syscall.Signal) error {
	return fmt.Errorf("sending %v: Windows only ends a process (SIGKILL or SIGTERM), other signals need a Unix system: %w", sig, errors.ErrUnsupported)
}
