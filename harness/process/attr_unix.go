//go:build unix && !linux

package process

import "syscall"

// sysProcAttr puts the process in a group of its own, out of the
// terminal's (Ctrl-C reaches this process, which stops its processes in
// order); a detached one gets a session of its own instead. No system but
// Linux has a parent-death signal: a watchdog ends the group when this
// process dies (watched).
func sysProcAttr(c Command) *syscall.SysProcAttr {
	if c.Detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// watched reports whether a watchdog ends c's process group when this
// process dies: every process but a detached one, which is meant to
// outlive it.
func watched(c Command) bool { return !c.Detached }
