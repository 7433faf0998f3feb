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
// (the manager: once its webhooks admit requests).
package devenv
