//go:build unix

package process

// WatchdogPid is the pid of p's watchdog; 0 when it has none.
func WatchdogPid(p *Process) int {
	if p.watchdog == nil {
		return 0
	}
	return p.watchdog.cmd.Process.Pid
}
