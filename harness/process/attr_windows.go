package process

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// sysProcAttr puts the process in a console process group of its own, so
// that Ctrl-C at the console reaches this process, which stops its
// processes in order; a detached one also gets no console. Nothing ends it
// when this process dies: Windows has no process group to signal, and the
// harness puts no process in a job object.
func sysProcAttr(c Command) *syscall.SysProcAttr {
	flags := uint32(windows.CREATE_NEW_PROCESS_GROUP)
	if c.Detached {
		flags |= windows.DETACHED_PROCESS
	}
	return &syscall.SysProcAttr{CreationFlags: flags}
}

// watched is false: the watchdog is a Unix shell's.
func watched(Command) bool { return false }
