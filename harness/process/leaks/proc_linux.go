package leaks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Procs reads every process in /proc; those that end meanwhile are left
// out.
func Procs() []Proc {
	entries, _ := os.ReadDir("/proc")
	var procs []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := ReadProc(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return procs
}

// ReadProc reads what /proc/<pid> says of pid.
func ReadProc(pid int) (Proc, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Proc{}, err
	}
	p, err := parseStat(string(stat))
	if err != nil {
		return Proc{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	if cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		p.Cmdline = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	}
	return p, nil
}

// SocketInodes lists the inodes of the sockets pid has open, as far as
// this process may see them.
func SocketInodes(pid int) map[uint64]bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, _ := os.ReadDir(dir)
	inodes := map[uint64]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if s, ok := strings.CutPrefix(target, "socket:["); ok {
			if inode, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				inodes[inode] = true
			}
		}
	}
	return inodes
}

// LoopbackListeners lists the TCP sockets listening where 127.0.0.1 (or
// ::1) reaches them: on a loopback or the unspecified address.
func LoopbackListeners() ([]Listener, error) {
	var out []Listener
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		ls, err := parseNetTCP(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, ln := range ls {
			if ln.IP.IsLoopback() || ln.IP.IsUnspecified() {
				out = append(out, ln)
			}
		}
	}
	return out, nil
}

// openFDs lists /proc/self/fd: descriptor and what it refers to. The
// descriptor reading the directory is in it, in every listing alike.
func openFDs() (map[string]string, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	fds := map[string]string{}
	for _, e := range entries {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		fds[e.Name()] = target
	}
	return fds, nil
}
