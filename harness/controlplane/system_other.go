//go:build !unix

package controlplane

import "syscall"

// noUnix is why Start refuses to start here.
const noUnix = "controlplane: the tuned control plane needs a Unix system: etcd listens on unix sockets in a 0700 directory, and its processes are stopped, paused and ended with the test process through process groups and signals; on Windows harness/envtest starts controller-runtime's envtest instead"

// sigStop and sigCont are the Unix signals' numbers, which no process
// here receives: Pause and Resume fail, saying the system does not
// support them (Process.Signal).
const sigStop, sigCont = syscall.Signal(0x13), syscall.Signal(0x12)

// oNoFollow is none: os.OpenFile has no such flag here.
const oNoFollow = 0
