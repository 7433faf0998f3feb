// Package vmcontroller wires the VirtualMachine controller (operator/vm)
// into a process: its flags, the driver, CRD registration, Events, health
// probes and client-go leader election on a Lease. cmd/vm-controller is a
// thin main over it, and the harness runs it in-process through Run.
package vmcontroller
