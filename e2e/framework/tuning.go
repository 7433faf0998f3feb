package framework

import "sigs.k8s.io/controller-runtime/pkg/envtest"

// The tuned settings below were chosen by measurement (`make bench` prints
// tuned against stock start times); each says why it is there.

func tuneEtcd(args *envtest.Arguments) {
	// Nothing survives a test run, so nothing needs to reach a disk.
	args.Set("unsafe-no-fsync", "true")
	args.Set("log-level", "error")
}

func tuneAPIServer(args *envtest.Arguments) {
	// API Priority and Fairness bootstraps its configuration objects and
	// waits for them before /healthz passes; tests need no fairness.
	args.Set("enable-priority-and-fairness", "false")
	// No Endpoints object for the kubernetes Service is reconciled.
	args.Set("endpoint-reconciler-type", "none")
	args.Set("profiling", "false")
}
