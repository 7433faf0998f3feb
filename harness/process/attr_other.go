//go:build !linux

package process

import "syscall"

// sysProcAttr puts the process in a group of its own, out of the
// terminal's (Ctrl-C reaches this process, which stops its processes in
// order); a detached one gets a session of its own instead. Nothing here
// ends it when this process dies: only Linux offers that (Pdeathsig).
func sysProcAttr(c Command) *syscall.SysProcAttr {
	if c.Detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}
