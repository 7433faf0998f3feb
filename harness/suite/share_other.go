//go:build !unix

package suite

import (
	"fmt"
	"runtime"
)

// errNoUnix says why a file cannot be shared safely here: the checks need
// openat without following symbolic links, and Unix owners and modes.
var errNoUnix = fmt.Errorf("sharing a file between Ginkgo's processes needs a Unix system (this is %s); run the suite in one process", runtime.GOOS)

func writeShared(string, []byte) (string, func() error, error) { return "", nil, errNoUnix }

func readPrivate(string) ([]byte, error) { return nil, errNoUnix }
