// Package devenv is the background dev environment behind `make
// envtest-up`: etcd, kube-apiserver and kube-controller-manager with this
// repository's manager and VirtualMachine controller running as processes
// against them, brought up as the e2e suite brings up its own
// (internal/testenv), and a kubectl of the same version.
//
// Up starts a supervisor in a process and session of its own, which runs
// Serve and outlives the command that started it; Down stops it, Status
// shows what runs, Restart restarts a component after a rebuild.
//
// The state directory (.kubeharness/envtest by default) holds everything
// of one environment: state.json (what runs: the supervisor's pid, each
// process's pid and executable, restart counts, the phase), env.lock, the
// control socket control.sock, the kubeconfigs, the logs (env.log,
// manager.log, vm-controller.log), bin/kubectl, and run/, the one
// directory below it with the control plane's certificates and etcd's
// data. Down removes run/ and no other directory, and signals only
// processes whose environment carries the state directory's mark: nothing
// the state file names is trusted.
//
// A state directory is one env up made: it holds the marker
// .kubeharness-envtest, written by the caller, and belongs to the caller,
// writable by no one else (statedir.go). Up creates a missing one (mode
// 0700) or adopts an empty one of the caller's, writing the marker; every
// command refuses any other directory, saying why, and removes and writes
// nothing there: not --state-dir / or a home directory, whose run/ down
// would remove, nor a directory another user can write in, where they
// could read the admin kubeconfig or plant links for the environment to
// write through. The files the environment writes there are new files
// renamed into place, so nothing already there is followed or written
// into.
//
// The lock: env.lock is held (flock) from the moment Up begins until the
// supervisor exits, so that one environment runs per state directory; Up
// hands it to the supervisor as its file descriptor 3. The pid in it names
// the holder in messages.
//
// The supervisor restarts the manager or the VirtualMachine controller
// when it exits: after 1 s, then twice as long after each quick exit, at
// most 1 min; once a component has run for 1 min, its next exit starts
// over at 1 s. Restart, through the control socket, restarts a component
// at once, with the backoff starting over, and returns once it runs again
// (the manager: once its webhooks admit requests). The supervisor reads at
// most 256 bytes of a request; a longer one gets an error and the
// connection is closed.
package devenv
