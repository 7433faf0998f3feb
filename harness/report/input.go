package report

import (
	"fmt"
	"io"
	"os"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// What the report reads as a whole is a regular file of bounded size: a
// JSON report or a summary named on a command line, or found in a run
// directory someone else wrote, could be /dev/zero (which never ends), a
// named pipe (which blocks until someone writes to it) or just too large
// to hold in memory.
const (
	// MaxReportSize bounds a Ginkgo JSON report (ReadReports): 256 MiB,
	// far above the report of a suite of thousands of specs with their
	// captured output, which is a few MiB.
	MaxReportSize = 256 << 20
	// MaxSummarySize bounds a run's summary (ReadSummary): 64 MiB, some
	// hundred times what a suite of thousands of specs writes.
	MaxSummarySize = 64 << 20
)

// openInput opens the file at path for reading without waiting for a
// writer, as opening a named pipe would (openFlags).
func openInput(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|openFlags, 0)
}

// An input is what readInput reads: what it should be ("a Ginkgo JSON
// report"), how to name one, and its size limit and the limit's name.
type input struct {
	what, hint string
	limit      int64
	limitName  string
}

var (
	reportInput  = input{"a Ginkgo JSON report", "name the file ginkgo --json-report wrote", MaxReportSize, "report.MaxReportSize"}
	summaryInput = input{"a run summary", "name the summary.json kubeharness report wrote", MaxSummarySize, "report.MaxSummarySize"}
)

// readInput reads f (opened by openInput, closed here), which must be a
// regular file of at most in.limit bytes.
func readInput(f *os.File, in input) ([]byte, error) {
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file as %s is: %s", f.Name(), ownership.KindOf(fi.Mode()), in.what, in.hint)
	}
	tooLarge := fmt.Errorf("%s is larger than %d MiB (%s), more than %s ever is: %s", f.Name(), in.limit>>20, in.limitName, in.what, in.hint)
	if fi.Size() > in.limit {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, in.limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > in.limit {
		return nil, tooLarge
	}
	return data, nil
}

// readInputFile reads the file at path as readInput does.
func readInputFile(path string, in input) ([]byte, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	return readInput(f, in)
}
