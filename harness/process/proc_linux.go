package process

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Alive reports whether pid is a process that runs: one that exists, that
// this process may signal, and that is no zombie (a zombie has exited and
// only waits for its parent to reap it).
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || len(stat) <= i+2 || stat[i+2] != 'Z'
}

// Owned reports whether pid is Alive and its environment carries mark
// (NAME=value, as Command.Mark sets it), as /proc/<pid>/environ shows the
// environment it started with.
func Owned(pid int, mark string) bool {
	if mark == "" || !Alive(pid) {
		return false
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	want := []byte(mark)
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// Runs reports whether pid is Alive and runs the executable exe (a path
// with its links resolved), as /proc/<pid>/exe shows it, so that a reused
// pid is not taken for the process; an empty exe is any.
func Runs(pid int, exe string) bool {
	if !Alive(pid) {
		return false
	}
	if exe == "" {
		return true
	}
	got, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(got, " (deleted)") == exe
}
