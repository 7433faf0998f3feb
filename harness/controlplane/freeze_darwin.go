package controlplane

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// canFreeze says whether a start can copy etcd's data while etcd is
// stopped by SIGSTOP (stopped): here it can.
const canFreeze = true

// sStop is a process's state once stopped (<sys/proc.h>).
const sStop = 4

// stopped returns once pid is stopped (SIGSTOP sent), as the kernel's
// process table says, or an error after timeout.
func stopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
		if err != nil {
			return err
		}
		if kp.Proc.P_stat == sStop {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %s of SIGSTOP", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}
