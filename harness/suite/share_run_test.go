package suite_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/suite"
)

// The flags by which the ginkgo command tells each parallel process which
// run it is one of: the address of the run's parallel server, and how
// many processes there are.
const (
	hostFlag  = "ginkgo.parallel.host"
	totalFlag = "ginkgo.parallel.total"
)

// helperEnv makes TestShareHelperProcess, in a process of its own, share a
// file ("write") or read one ("read"); helperHandleEnv is the handle to
// read, helperOutEnv the file it writes the handle or the error to.
const (
	helperEnv       = "KUBEHARNESS_SUITE_SHARE_HELPER"
	helperHandleEnv = "KUBEHARNESS_SUITE_SHARE_HANDLE"
	helperOutEnv    = "KUBEHARNESS_SUITE_SHARE_OUT"
)

// TestShareHelperProcess is a Ginkgo process of a run the test process
// plays the ginkgo command of: started by it, with the parallel server
// address it was given.
func TestShareHelperProcess(t *testing.T) {
	what := os.Getenv(helperEnv)
	if what == "" {
		t.Skip("a process that TestReadSharedRefusesAnotherRunsHandle starts")
	}
	out := os.Getenv(helperOutEnv)
	var result string
	switch what {
	case "write":
		shared, _, err := suite.ShareFile("kubeconfig", kubeconfigFor(t, realServer))
		if err != nil {
			t.Fatal(err)
		}
		result = shared // left in place for the reader: the run "crashed"
	case "read":
		if _, err := suite.ReadShared(os.Getenv(helperHandleEnv)); err != nil {
			result = "error: " + err.Error()
		} else {
			result = "read"
		}
	}
	if err := os.WriteFile(out, []byte(result), 0o600); err != nil {
		t.Fatal(err)
	}
}

// process runs TestShareHelperProcess as a Ginkgo process whose parallel
// server is host ("": not parallel), with this process as its ginkgo
// command, and returns what it wrote.
func process(t *testing.T, tmp, what, host, handle string) string {
	t.Helper()
	args := []string{"-test.run=^TestShareHelperProcess$"}
	if host != "" {
		args = append(args, "-"+hostFlag+"="+host, "-"+totalFlag+"=2", "-ginkgo.parallel.process=2")
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, helperEnv+"="+what, helperHandleEnv+"="+handle, helperOutEnv+"="+out)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the %s process: %v\n%s", what, err, output)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// asParallelProcess makes this process one of a parallel run whose server
// is host, until the test ends.
func asParallelProcess(t *testing.T, host string) {
	t.Helper()
	for name, value := range map[string]string{hostFlag: host, totalFlag: "2"} {
		f := flag.Lookup(name)
		if f == nil {
			t.Fatalf("no flag %s: Ginkgo's parallel flags are not registered", name)
		}
		old := f.Value.String()
		if err := flag.Set(name, value); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = flag.Set(name, old) })
	}
}

// Someone who read a handle off one run's parallel server and sent it to
// another run's, before that run's first process did, would point the
// second run at the first run's cluster: the file is this user's and
// private, and carries the token. ReadShared refuses it: the file names
// the run it was written in, a parallel server and the ginkgo process that
// started it (here the test process plays ginkgo for the processes it
// starts). What the same run shared is read.
func TestReadSharedRefusesAnotherRunsHandle(t *testing.T) {
	if _, err := os.Stat(os.Args[0]); err != nil {
		t.Skipf("the test binary to start as Ginkgo processes: %v", err)
	}
	const runA, runB = "127.0.0.1:40001", "127.0.0.1:40002"
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fromA := process(t, tmp, "write", runA, "")
	if !strings.HasPrefix(fromA, "kubeharness-share/v1 ") {
		t.Fatalf("run A's first process shared %q", fromA)
	}
	fromSerial := process(t, tmp, "write", "", "")

	for _, tc := range []struct {
		name, handle, host string
		inProcess          bool // read here: another ginkgo process than A's
		want               string
	}{
		{"another parallel server", fromA, runB, false, "another run's handle"},
		{"another ginkgo process with the same server address", fromA, runA, true, "another run's handle"},
		{"a run that was not parallel", fromSerial, runB, false, "another run's handle"},
		{"another process of a run that was not parallel", fromSerial, "", false, "another run's handle"},
		{"the same run", fromA, runA, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if tc.inProcess {
				asParallelProcess(t, tc.host)
				if _, err := suite.ReadShared(tc.handle); err != nil {
					got = "error: " + err.Error()
				} else {
					got = "read"
				}
			} else {
				got = process(t, tmp, "read", tc.host, tc.handle)
			}
			t.Log(got)
			switch {
			case tc.want == "" && got != "read":
				t.Errorf("a process of the run that shared it: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("ReadShared of another run's handle: %s; want a refusal saying %q", got, tc.want)
			}
		})
	}

	// Process 1 reads what it shared itself, parallel or not.
	asParallelProcess(t, runB)
	shared, remove, err := suite.ShareFile("kubeconfig", kubeconfigFor(t, suiteServer))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = remove() }()
	if _, err := suite.ReadShared(shared); err != nil {
		t.Errorf("ReadShared in the process that shared it: %v", err)
	}
}
