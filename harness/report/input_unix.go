//go:build unix

package report

import "syscall"

// openFlags open a named pipe without blocking until it has a writer, so
// that readInput can see what it is and refuse it.
const openFlags = syscall.O_NONBLOCK
