//go:build unix

package controlplane

import "syscall"

// noUnix is why Start refuses to start on this system; empty: it starts.
const noUnix = ""

// sigStop and sigCont pause and continue a process (Pause, Resume).
const sigStop, sigCont = syscall.SIGSTOP, syscall.SIGCONT

// oNoFollow has OpenFile refuse a symbolic link at the path's end.
const oNoFollow = syscall.O_NOFOLLOW
