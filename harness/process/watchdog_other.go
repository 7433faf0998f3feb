//go:build !unix

package process

import (
	"errors"
	"syscall"
)

// watchdog is none: the watchdog is a Unix shell's, and watched is false
// here.
type watchdog struct{}

func startWatchdog(syscall.Signal) (*watchdog, error) { return nil, errors.ErrUnsupported }

func (*watchdog) pgid() int { return 0 }

func (*watchdog) join(*syscall.SysProcAttr) {}

func (*watchdog) end() {}
