package controlplane

// The tuned settings were chosen by measurement (`kubeharness bench` prints
// tuned against stock start times). See startTuned for what else differs.

func tunedEtcdFlags() []string {
	return []string{
		// Nothing survives a test run, so nothing needs to reach a disk (the
		// data directory is on tmpfs as well).
		"--unsafe-no-fsync=true",
		// A single member elects itself after one election timeout; at the
		// default 1s that is most of etcd's start.
		"--heartbeat-interval=10",
		"--election-timeout=50",
		"--log-level=error",
	}
}

func tunedAPIServerFlags() []string {
	return []string{
		// API Priority and Fairness bootstraps and watches its own
		// configuration; a test API server needs no fairness.
		"--enable-priority-and-fairness=false",
		// No master lease or Endpoints object for the kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// On SIGTERM the API server drains its non-long-running requests,
		// answering new ones 429 with Retry-After, and then gives open
		// watches 2 s. Without it, it waits up to its request timeout
		// (a minute) for watches that never end, so every stop and restart
		// with a client watching ran into the SIGKILL grace (5 s for a
		// restart, 20 s for a stop).
		"--shutdown-send-retry-after=true",
	}
}
