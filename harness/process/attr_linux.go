package process

import "syscall"

// sysProcAttr puts the process in a group of its own, out of the
// terminal's (Ctrl-C reaches this process, which stops its processes in
// order), and has the kernel send it c.DeathSignal when this process dies,
// however it dies; a detached one gets a session of its own instead. With
// the watchdog asked for (EnvWatchdog) the watchdog sends it instead, as
// on the other Unix systems.
func sysProcAttr(c Command) *syscall.SysProcAttr {
	if c.Detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	if watched(c) {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal(c)}
}

// watched reports whether a watchdog ends c's process group when this
// process dies. Linux has the kernel's parent-death signal for that, which
// costs nothing per start and leaves no moment unguarded, so only
// EnvWatchdog asks for the watchdog here: to run on Linux what macOS runs.
func watched(c Command) bool {
	return !c.Detached && watchdogAsked()
}
