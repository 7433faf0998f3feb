package report

import (
	"fmt"
	"runtime"
)

// ThisMachine describes the machine the caller runs on, for MachineEntry:
// "2 cores, linux/amd64".
func ThisMachine() string {
	return fmt.Sprintf("%d cores, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}
