//go:build unix

package bundle

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO where a log should be (planted in a shared $ARTIFACTS, or a
// process's log piped) is refused at once, not waited on for a writer
// that never comes; so is a device, which never ends.
func TestLogWindowRefusesAFIFOAndADevice(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "manager.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	for _, c := range []struct{ path, kind string }{{fifo, "a named pipe"}, {"/dev/zero", "a character device"}} {
		done := make(chan error, 1)
		go func() {
			_, err := LogWindow(c.path, time.Now(), time.Now())
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file but "+c.kind) {
				t.Errorf("LogWindow of %s: got %v, want a refusal naming %s", c.path, err, c.kind)
			}
		case <-time.After(10 * time.Second):
			// The goroutine stays blocked in open(2); the test binary
			// exits with it.
			t.Errorf("LogWindow of %s (%s) still waits after 10s", c.path, c.kind)
		}
	}
}
