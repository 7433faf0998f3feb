package process

import "golang.org/x/sys/windows"

// stillActive is the exit code GetExitCodeProcess gives a process that
// runs (STILL_ACTIVE).
const stillActive = 259

// Alive reports whether pid is a process that runs: one this process may
// open whose exit code is not in yet. A process that exited with status
// 259 counts as running.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == stillActive
}

// Owned reports whether pid's environment carries mark; Windows offers no
// reading of another process's environment, so it reports false, and
// StopOwned signals nothing.
func Owned(pid int, mark string) bool { return false }

// Runs reports whether pid runs the executable exe; without /proc there is
// no telling, so it reports false unless exe is empty (any), when it is
// Alive.
func Runs(pid int, exe string) bool { return exe == "" && Alive(pid) }
