//go:build unix

package process

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// The watchdog ends a process's group when this process dies, however it
// dies (SIGKILL, a panic, `go test -timeout`), where the kernel sends no
// parent-death signal (every Unix system but Linux). It is /bin/sh (on
// every Unix system) reading a pipe whose write end only this process
// holds (os.Pipe's descriptors close on exec, so no child inherits it).
// Nothing is ever written: when this process dies the kernel closes the
// write end, read returns at the end of input, and the shell sends the
// death signal to its own process group (kill's pid 0).
//
// The watchdog starts first, leading a new group, and the process starts
// in that group: no moment of the process's life is unguarded (should this
// process die before the process starts, the watchdog ends only itself),
// and the group's id, the watchdog's pid, cannot be reused while the
// watchdog lives, so its signal cannot reach a stranger. It ignores
// SIGTERM, so that it keeps watching while Stop waits out a grace, and
// SIGHUP, which the kernel sends an orphaned group with a paused member.
// Once the process has been reaped, this process kills the watchdog and
// reaps it before it closes the write end, so that the watchdog does not
// take that for this process's death and signal what the process left in
// the group.
//
// What it costs: a shell per process started (a fork and exec before the
// process's, about a millisecond), and a group whose id is not the
// process's pid (Process.Pgid).

// watchdogScript is the shell's program; %d is the signal's number.
const watchdogScript = "trap '' HUP TERM; read -r line; kill -%d 0"

// watchdog is a running watchdog and the write end of its pipe.
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File
}

// startWatchdog starts a watchdog in a process group of its own, which
// sends sig to the group when this process dies.
func startWatchdog(sig syscall.Signal) (*watchdog, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the pipe of its watchdog: %w", err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(watchdogScript, int(sig)))
	cmd.Stdin = r
	// No environment: nothing for the shell to read at start (ENV,
	// BASH_ENV); trap, read and kill are built in.
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting its watchdog (/bin/sh, which ends the process's group when this process dies): %w", err)
	}
	return &watchdog{cmd: cmd, w: w}, nil
}

// pgid is the id of the watchdog's group: its pid.
func (wd *watchdog) pgid() int { return wd.cmd.Process.Pid }

// join has a process started with attr join the watchdog's group. The
// group is there as long as the watchdog is unreaped.
func (wd *watchdog) join(attr *syscall.SysProcAttr) {
	attr.Setpgid, attr.Pgid = true, wd.pgid()
}

// end kills and reaps the watchdog, and then closes its pipe. A nil
// watchdog is none.
func (wd *watchdog) end() {
	if wd == nil {
		return
	}
	_ = wd.cmd.Process.Kill()
	_ = wd.cmd.Wait()
	wd.w.Close()
}
