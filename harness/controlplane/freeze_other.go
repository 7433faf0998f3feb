//go:build !linux && !darwin

package controlplane

import (
	"errors"
	"time"
)

// canFreeze says whether a start can copy etcd's data while etcd is
// stopped by SIGSTOP: not here, where this package cannot tell when it
// has stopped. A start then makes a missing template with a start and
// stop of its own first (ensureTemplate).
const canFreeze = false

func stopped(int, time.Duration) error {
	return errors.New("controlplane: cannot tell on this system when a process has stopped")
}
