//go:build !linux

package leaks

import (
	"errors"
	"fmt"
)

// errNoProc is what the readers of /proc report without one.
var errNoProc = fmt.Errorf("reading /proc: %w", errors.ErrUnsupported)

// Procs lists no process: without /proc there is no reading them.
func Procs() []Proc { return nil }

// ReadProc reports errors.ErrUnsupported: it needs /proc.
func ReadProc(pid int) (Proc, error) { return Proc{}, errNoProc }

// SocketInodes lists nothing: it needs /proc.
func SocketInodes(pid int) map[uint64]bool { return map[uint64]bool{} }

// LoopbackListeners reports errors.ErrUnsupported: it needs /proc.
func LoopbackListeners() ([]Listener, error) { return nil, errNoProc }

func openFDs() (map[string]string, error) { return nil, errNoProc }
