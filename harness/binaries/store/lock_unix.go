//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

const (
	// lockPoll is how often a waiting builder looks whether the lock is
	// free.
	lockPoll = 250 * time.Millisecond
)

// Lock takes an exclusive lock on providing the binary name in the
// store directory dir (the file .name.lock in it), waiting (and saying so
// on out) while another process holds it, so that two builders never write
// the same binary at once, while builds of other binaries go on. The
// lock is the kernel's (flock): it goes with the process that holds it,
// even one that is killed.
func Lock(ctx context.Context, dir, name string, out io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s for a build of %s: %w", dir, name, err)
	}
	fd := int(f.Fd())
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		fmt.Fprintf(out, "%s: waiting for another build of it into %s to finish\n", name, dir)
		err = flockWait(ctx, fd)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s for a build of %s: %w", dir, name, err)
	}
	return func() {
		_ = syscall.Flock(fd, syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// flockWait takes fd's exclusive lock once it is free, looking every
// lockPoll, or gives up when ctx ends.
func flockWait(ctx context.Context, fd int) error {
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lockPartial takes the exclusive lock of f, a download just begun, which
// it holds until f is closed: removeStalePartials leaves alone a partial
// download whose lock is held. Should removeStalePartials hold it for a
// moment (it looks at every partial download), this waits; were the file
// removed meanwhile, the download goes on in f all the same.
func lockPartial(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// abandoned reports whether f, a partial download, is held by no process:
// the one that made it is gone. It takes f's lock to find out, which
// closing f lets go.
func abandoned(f *os.File, _ os.FileInfo) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
