package leaks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Proc is what /proc says about a process.
type Proc struct {
	PID, PPID, PGID int
	// State is proc(5)'s one letter: R running, S sleeping, Z zombie, ...
	State string
	// Start is when the process started, in clock ticks after boot.
	Start   uint64
	Cmdline []string
}

// Key names a process across pid reuse: its pid and start time.
type Key struct {
	PID   int
	Start uint64
}

// Key is the process's Key.
func (p Proc) Key() Key { return Key{p.PID, p.Start} }

// Zombie reports whether the process has exited and waits to be reaped.
func (p Proc) Zombie() bool { return p.State == "Z" }

// Mentions reports whether an argument names path or something below it.
func (p Proc) Mentions(path string) bool {
	for _, arg := range p.Cmdline {
		for rest := arg; ; {
			i := strings.Index(rest, path)
			if i < 0 {
				break
			}
			rest = rest[i+len(path):]
			if rest == "" || !isNameByte(rest[0]) {
				return true
			}
		}
	}
	return false
}

// isNameByte: kubeharness-etcd-12 is not kubeharness-etcd-123.
func isNameByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '-' || b == '_' || b == '.'
}

// parseStat reads /proc/PID/stat (proc(5)): "pid (comm) state ppid pgrp
// ...", starttime the 22nd field. comm may hold spaces and parentheses, so
// the fields after it are found from its last ')'.
func parseStat(stat string) (Proc, error) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("unexpected format %q", stat)
	}
	f := strings.Fields(stat[end+1:])
	if len(f) < 20 {
		return Proc{}, fmt.Errorf("unexpected format %q", stat)
	}
	var p Proc
	var errs []error
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		errs = append(errs, err)
		return n
	}
	p.PID, p.State, p.PPID, p.PGID = atoi(strings.TrimSpace(stat[:open])), f[0], atoi(f[1]), atoi(f[2])
	start, err := strconv.ParseUint(f[19], 10, 64)
	p.Start = start
	if err := errors.Join(append(errs, err)...); err != nil {
		return Proc{}, fmt.Errorf("unexpected format %q: %w", stat, err)
	}
	return p, nil
}
