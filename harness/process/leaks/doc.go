// Package leaks looks for what processes left behind, for checks that
// stopping them gives back all they took: the machine's processes (Procs,
// with their process groups, start times and command lines), the TCP
// sockets listening on loopback and who holds them (LoopbackListeners,
// SocketInodes), and this process's own file descriptors and goroutines
// (Self), with what is new since a baseline.
//
// Platforms: what is read from /proc (Procs, ReadProc, SocketInodes,
// LoopbackListeners and the file descriptors of ReadSelf) works on Linux
// only; elsewhere those report errors.ErrUnsupported, or nothing where they
// return no error.
package leaks
