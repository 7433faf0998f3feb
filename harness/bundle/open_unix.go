//go:build unix

package bundle

import (
	"os"
	"syscall"
)

// openFlags open a log for reading without waiting: opening a FIFO for
// reading waits for a writer, unless O_NONBLOCK says not to.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
