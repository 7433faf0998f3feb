package leaks

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestReadProcOfThisProcess(t *testing.T) {
	self, err := ReadProc(os.Getpid())
	if err != nil || self.PPID != os.Getppid() || self.PGID != syscall.Getpgrp() || self.Start == 0 || len(self.Cmdline) == 0 {
		t.Errorf("ReadProc(self) = %+v, %v", self, err)
	}
	found := false
	for _, p := range Procs() {
		found = found || p.Key() == self.Key()
	}
	if !found {
		t.Error("Procs does not list this process")
	}
}

// The live tables hold a listener this process opens, with the socket's
// inode.
func TestLoopbackListenersSeesOurs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ls, err := LoopbackListeners()
	if err != nil {
		t.Fatal(err)
	}
	mine := SocketInodes(os.Getpid())
	for _, l := range ls {
		if l.Port == port && mine[l.Inode] {
			return
		}
	}
	t.Errorf("port %d with one of our sockets %v not among the listeners %v", port, mine, ls)
}

// New file descriptors and goroutines are counted and named.
func TestSelfSeesNewFDsAndGoroutines(t *testing.T) {
	const n = 3
	base, err := ReadSelf()
	if err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	for i := range n {
		f, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("leak-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	block := make(chan struct{})
	for range n {
		go leakedGoroutine(block)
	}
	defer func() {
		close(block)
		for _, f := range files {
			f.Close()
		}
	}()
	// The goroutines are told by their stacks once all of them block.
	want := fmt.Sprintf("%+d at %s", n, "github.com/kubeharness/kubeharness/harness/process/leaks.leakedGoroutine")
	var now *Self
	// Polled up to 10 s; checked below whether or not they all blocked.
	_ = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if now, err = ReadSelf(); err != nil {
			return false, err
		}
		return strings.Contains(strings.Join(now.NewGoroutines(base), "\n"), want), nil
	})
	if now == nil {
		t.Fatal("could not read this process's state")
	}
	// Other tests' goroutines and descriptors may end meanwhile: only
	// the listed ones are checked.
	leakedFDs := 0
	for _, fd := range now.NewFDs(base) {
		if strings.Contains(fd, string(filepath.Separator)+"leak-") {
			leakedFDs++
		}
	}
	if leakedFDs != n || len(now.FDs) < n {
		t.Errorf("new fds %v; want the %d files", now.NewFDs(base), n)
	}
	gs := strings.Join(now.NewGoroutines(base), "\n")
	if !strings.Contains(gs, want) || now.Goroutines < n {
		t.Errorf("new goroutines:\n%s\nwant %d in leakedGoroutine", gs, n)
	}
}

func leakedGoroutine(block chan struct{}) { <-block }

// Settle returns once this process is back within slack of a baseline.
func TestSettle(t *testing.T) {
	base, err := Steady(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	go leakedGoroutine(block)
	close(block)
	now, err := Settle(base, 0, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if gs := strings.Join(now.NewGoroutines(base), "\n"); strings.Contains(gs, "leakedGoroutine") {
		t.Errorf("after Settle, new goroutines:\n%s", gs)
	}
}
