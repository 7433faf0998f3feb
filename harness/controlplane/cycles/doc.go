// Package cycles checks that a control plane gives back all it takes: Run
// starts and stops one (harness/controlplane) many times in a row and
// reports every start or stop that failed and whatever the cycles left
// behind: processes (and their children, zombies included), listening
// ports, etcd's tmpfs data directories and other temp directories, and
// file descriptors and goroutines of this process beyond a small slack.
//
// The machine may be shared: other suites start control planes of their
// own meanwhile. Only what is attributable to the cycles counts: the
// processes they started and their process groups, the directories and
// ports they were handed, this process's own file descriptors and
// goroutines, measured against a baseline taken after the first cycle.
// What others hold is reported as notes.
//
// Platforms: Linux only; it reads /proc through harness/process/leaks, and
// elsewhere Run returns an error wrapping errors.ErrUnsupported before
// the first cycle.
package cycles
