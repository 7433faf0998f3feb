//go:build unix && !linux

package process

import "syscall"

// Alive reports whether pid is a process that exists and that this process
// may signal. Without /proc a zombie (exited, not yet reaped) counts as
// alive.
func Alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// Owned reports whether pid's environment carries mark; without /proc
// there is no reading another process's environment, so it reports false.
func Owned(pid int, mark string) bool { return false }

// Runs reports whether pid runs the executable exe; without /proc there is
// no telling, so it reports false unless exe is empty (any), when it is
// Alive.
func Runs(pid int, exe string) bool { return exe == "" && Alive(pid) }
