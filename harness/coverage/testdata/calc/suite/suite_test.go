package suite

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/kubeharness/kubeharness/harness/coverage"
)

func TestSuite(t *testing.T) {
	RunSpecs(t, "calc")
}

var _ = coverage.RecordSpecs(coverage.Recording{Dir: func() string { return os.Getenv("SPEC_COVERAGE") }})

var (
	worker     *exec.Cmd
	toWorker   io.WriteCloser
	fromWorker *bufio.Scanner
)

// The worker runs the code under test, as a controller manager would.
var _ = BeforeSuite(func() {
	worker = exec.Command(os.Getenv("WORKER"))
	worker.Stderr = os.Stderr
	var err error
	if toWorker, err = worker.StdinPipe(); err != nil {
		Fail(err.Error())
	}
	out, err := worker.StdoutPipe()
	if err != nil {
		Fail(err.Error())
	}
	if err := worker.Start(); err != nil {
		Fail(err.Error())
	}
	fromWorker = bufio.NewScanner(out)
	if !fromWorker.Scan() || fromWorker.Text() != "ready" {
		Fail("the worker did not start")
	}
})

var _ = AfterSuite(func() {
	_ = toWorker.Close()
	_ = worker.Wait()
})

// ask has the worker answer a request.
func ask(format string, args ...any) string {
	fmt.Fprintf(toWorker, format+"\n", args...)
	if !fromWorker.Scan() {
		Fail("the worker did not answer")
	}
	return fromWorker.Text()
}
