package process

import "syscall"

// sysProcAttr puts the process in a group of its own, out of the
// terminal's (Ctrl-C reaches this process, which stops its processes in
// order), and has the kernel send it c.DeathSignal when this process dies,
// however it dies; a detached one gets a session of its own instead.
func sysProcAttr(c Command) *syscall.SysProcAttr {
	if c.Detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	sig := c.DeathSignal
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}
