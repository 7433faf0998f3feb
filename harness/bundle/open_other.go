//go:build !unix

package bundle

import "os"

// openFlags open a log for reading; there is no FIFO to wait on here.
const openFlags = os.O_RDONLY
