// Package process is a child process's life, the one way the harness runs
// one: Command.Start starts it with its output going to a writer, in a
// process group of its own (so that Ctrl-C at a terminal reaches the test
// run first, which stops its processes in order), dying with its parent
// where the system allows; Process.Done and Wait tell when it has exited
// and been reaped; Process.Stop ends it with SIGTERM, a grace period and
// SIGKILL to its whole group. Alive, WaitGone, Owned and StopOwned look at
// processes this one did not start, or can no longer reap, by pid: the
// environment mark a Command gives its process (and whatever that starts)
// is how they tell one of theirs from a process that reused its pid.
//
// The sub-package leaks looks for what processes left behind: processes,
// listening sockets, this process's file descriptors and goroutines.
//
// Platforms:
//   - Linux: everything. A started process gets Command.DeathSignal
//     (SIGKILL unless set) when this process dies, however it dies
//     (prctl's PR_SET_PDEATHSIG); Alive tells a zombie from a live process;
//     Owned and Runs read /proc/<pid>/environ and /proc/<pid>/exe.
//     EnvWatchdog=1 has the watchdog below send the death signal instead.
//   - Other Unix systems (macOS): processes start in their own group and
//     stop as on Linux. A watchdog leads each process's group (/bin/sh
//     reading a pipe only this process can write, watchdog_unix.go; the
//     group's id is Process.Pgid) and sends the group Command.DeathSignal
//     when this process dies, however it dies; a detached process has
//     none. Alive takes a zombie for alive; Owned and Runs, which need
//     /proc, report false, so StopOwned signals nothing.
//   - Windows: processes start, are waited for and reaped as elsewhere, in
//     a console process group of their own; Stop and Kill end the process
//     alone (TerminateProcess: no SIGTERM, no group), SignalGroup and
//     Signal refuse any signal but SIGKILL and SIGTERM, and nothing ends a
//     process when this one dies. Alive asks the process's exit code; Owned
//     and Runs report false.
package process
