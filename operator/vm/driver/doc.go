// Package driver runs the servers behind VirtualMachine resources: one
// server per VirtualMachine, created, found again, started, measured and
// deleted through a Driver. It imports no operator package; the controller
// turns a VirtualMachine into a Machine (namespace, name, UID, image, CPU
// and memory limits as resource.Quantity).
//
// # Drivers
//
//   - docker (NewDocker): a Docker container per Machine, through the
//     Docker Engine API.
//   - fake (NewFake): servers in memory, for specs that need no Docker,
//     with knobs to fail calls, stop or remove servers behind the
//     controller's back, and count calls.
//
// ForName builds either from its name, for a --vm-driver flag (Known and
// Names check and list the names; WithDockerOptions configures docker).
//
// # Errors
//
// Machine.Validate, and every Driver method, report a Machine that cannot
// be run with ErrInvalidMachine. Create reports a missing image with
// ErrImageNotFound and a name held by a server of another UID (or of no
// VirtualMachine at all) with a *NotOwnedError (errors.Is ErrNotOwned);
// Usage reports a Machine without a server with ErrServerNotFound.
// IsPermanent tells those, and the errors a driver marks with Permanent,
// from transient ones (daemon unreachable, timeouts, conflicts with a
// concurrent change): requeue transient errors with back-off, record
// permanent ones and wait for a change of the VirtualMachine. Reason gives
// a condition reason for an error.
//
// # Docker containers
//
// Configuration follows the Docker CLI: DOCKER_HOST (the daemon's address,
// default unix:///var/run/docker.sock), DOCKER_CERT_PATH (a directory with
// ca.pem, cert.pem, key.pem; default ~/.docker), DOCKER_TLS_VERIFY (any
// non-empty value: verify the daemon's certificate against ca.pem) and
// DOCKER_API_VERSION (a fixed API version; by default it is negotiated with
// the daemon). DockerOptions override each. A certificate file that is
// missing, unreadable or invalid is an error of NewDocker naming the file
// and the daemon; a daemon whose certificate ca.pem does not vouch for, or
// one refusing the client certificate, is a permanent error of the call
// (and of Ping) naming the daemon and the files.
//
// A Machine's container is named ContainerName(namespace, name), that is
// "<namespace>_<name>" with characters outside [a-zA-Z0-9.-] replaced by
// '-' (no Kubernetes name holds '_', so two VirtualMachines never share a
// container name), and carries the labels
//
//	cloudnative.kubeharness.dev/namespace=<namespace>
//	cloudnative.kubeharness.dev/name=<name>
//	cloudnative.kubeharness.dev/uid=<uid>
//	app.kubernetes.io/managed-by=kubeharness-vm-controller
//
// It is found by the uid label (and the managed-by one), never by its
// name: found again after a controller restart, never adopted by a
// VirtualMachine created again under the same name (a new UID). A container
// with the name but not the uid label is not touched: Create returns a
// *NotOwnedError whose OwnerUID (OwnerNamespace, OwnerName) are the labels
// of an earlier VirtualMachine's container (empty for a container this
// controller did not create), and Get and Delete for the Machine do not see
// it. ListOwned lists every container of the driver with the labels, so a
// controller can remove those whose VirtualMachine is gone.
//
// The limits are exact: NanoCPUs = CPU × 10^9, computed as
// CPU.MilliValue() × 10^6 (1 → 1e9, 500m → 5e8, 2500m → 2.5e9; finer than
// a millicore rounds up), Memory = Memory.Value() bytes (64Mi → 67108864,
// 4G → 4e9), MemorySwap = Memory (no swap beyond the limit). Docker's
// minimums, 10m CPU and 6Mi memory, are checked first (ErrInvalidMachine),
// and so is the host's capacity (Capacity: docker info's CPUs and memory):
// a Machine asking for more is ErrInvalidMachine, in words that do not
// tell the host's size. A container may hold DockerOptions.PidsLimit
// processes (1024 by default), has every capability dropped but
// ServerCapabilities, and runs with no-new-privileges.
//
// Images are references with a tag or a digest (ValidateImage): a bare
// name, which the daemon would also match against image IDs by prefix, is
// ErrInvalidMachine, and an image the daemon finds for a reference but
// that does not carry it among its tags (or digests) is ErrImageNotFound.
// Errors that end in a VirtualMachine's status (ErrInvalidMachine,
// ErrImageNotFound) do not name the daemon.
// The restart policy is "no": the controller decides whether a stopped
// server runs again, by calling Create, which starts an exited or created
// container, unpauses a paused one, and replaces a dead one. Create checks
// that the image is present (image inspect) before creating a container,
// and does not pull it unless DockerOptions.Pull is set. An existing
// container is not changed when the Machine's image or limits change:
// Server.Image, Server.CPU and Server.Memory tell what it has, so the
// controller can delete and create it. Limits that are what the Machine's
// would give are reported as the Machine's quantities, so a CPU finer than
// a millicore (or memory with a fractional byte), rounded up in the
// container, does not look changed.
//
// # Usage
//
// Usage is computed from the container's stats, sampled with the one-shot
// stats call (stream=false, one-shot=true: a single sample, without the
// daemon's previous one):
//
//	cpuDelta    = cpu_stats.cpu_usage.total_usage - previous total_usage
//	systemDelta = cpu_stats.system_cpu_usage      - previous system_cpu_usage
//	CPU         = cpuDelta / systemDelta × online_cpus × 100 / (Machine.CPU in cores)
//
//	used        = memory_stats.usage - memory_stats.stats.total_inactive_file (cgroup v1)
//	                                 - memory_stats.stats.inactive_file       (cgroup v2)
//	Memory      = used / Machine.Memory in bytes × 100
//
// The first three lines and "used" are what `docker stats` shows (CPU % of
// one core, memory without the reclaimable page cache); dividing by the
// Machine's limits makes 100 the whole limit, so CPU 50 for a 2-core
// Machine is one core busy. online_cpus falls back to the number of per-CPU
// counters for daemons that do not report it. A daemon without one-shot
// stats returns its own previous sample (precpu_stats), which is then used.
//
// One sample has no previous one (precpu_stats is empty), so the driver
// keeps the last sample per Machine: a Usage call measures the average CPU
// use since the previous call for the same container. The first call for a
// container (and a call that finds no usable previous sample: the container
// was replaced or restarted, or no time has passed) takes two samples
// DockerOptions.CPUSampleInterval apart (500ms by default) and so returns
// after that interval, with the average over it. (Some daemons, Docker
// 20.10 among them, answer a one-shot stats call only at their stats
// collector's next tick, once a second: there any call can take up to a
// second, and a first call up to two.) Memory is the current use. A server that is not running uses nothing: Usage returns zeros (and
// Get tells Running false). Measurement noise can put CPU slightly above
// 100.
//
// # Fake
//
// The fake driver validates Machines, names servers and refuses foreign
// names as the docker driver does. Its usage moves with each call: the
// n-th Usage call for a running server returns DefaultFakeUsage(m, n)
// (CPU 10, 20, ..., 100 then again; Memory 5, 10, ..., 100 then again)
// unless SetUsageFunc changes it. FailNext queues failures per method
// (wrap the error with Permanent for a permanent one); Stop, SetState and
// Remove change servers behind the controller's back; AddForeign plants a
// server with a Machine's name that it does not own; SetImagePresent makes
// an image missing; Calls counts calls, failed ones included, so a spec
// can assert that nothing loops; List reports the servers.
package driver
