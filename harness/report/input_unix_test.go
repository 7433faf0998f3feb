//go:build unix

package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRefusesWhatIsNoRegularFile: a JSON report or summary that is a
// named pipe, a device or a directory is refused before anything is read
// from it (a pipe would block until written to, /dev/zero never ends),
// and one larger than its limit too. One pipe is held open for writing
// with a report in it, so that a reader that does not refuse it would
// read that, and then wait for more: the test then fails, rather than
// hangs, after 20 seconds.
func TestReadRefusesWhatIsNoRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "report.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("[]"); err != nil {
		t.Fatal(err)
	}
	// A pipe no one has open: opening it to read blocks until someone
	// opens it to write, unless opened not to (O_NONBLOCK). Opened and
	// closed at the end, so that a reader blocked in open returns.
	lonely := filepath.Join(dir, "lonely.json")
	if err := syscall.Mkfifo(lonely, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(lonely, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: larger than MaxReportSize on paper, nothing on disk.
	if err := f.Truncate(MaxReportSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, tc := range []struct {
		name string
		read func() error
		want string
	}{
		{"a report that is a named pipe", func() error { _, err := ReadReports(fifo); return err },
			fifo + " is a named pipe, not a regular file as a Ginkgo JSON report is: name the file ginkgo --json-report wrote"},
		{"a report that is a named pipe no one writes", func() error { _, err := ReadReports(lonely); return err },
			lonely + " is a named pipe, not a regular file"},
		{"a summary that is a named pipe", func() error { _, err := ReadSummary(fifo); return err },
			fifo + " is a named pipe, not a regular file as a run summary is"},
		// /dev/null, not /dev/zero: a reader that does not refuse a device
		// reads no more than nothing from it.
		{"a report that is a device", func() error { _, err := ReadReports(os.DevNull); return err },
			os.DevNull + " is a character device, not a regular file"},
		{"a report that is a directory", func() error { _, err := ReadReports(dir); return err },
			dir + " is a directory, not a regular file"},
		{"a report larger than MaxReportSize", func() error { _, err := ReadReports(huge); return err },
			huge + " is larger than 256 MiB (report.MaxReportSize), more than a Ginkgo JSON report ever is"},
		{"a summary larger than MaxSummarySize", func() error { _, err := ReadSummary(huge); return err },
			huge + " is larger than 64 MiB (report.MaxSummarySize)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tc.read() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v; want %q", err, tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still reading after 20 s; want it refused at once with %q", tc.want)
			}
		})
	}
}
