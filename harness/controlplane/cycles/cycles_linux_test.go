package cycles

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/harness/process/leaks"
)

// cycleHelperEnv makes the test binary a process for the leak detectors to
// find: "listen" listens on a loopback port, prints it and waits.
const cycleHelperEnv = "KUBEHARNESS_TEST_CYCLE_HELPER"

func init() {
	if os.Getenv(cycleHelperEnv) != "listen" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	select {} // holds the port until the test kills it
}

// TestCycleLedgerSeesLeakedDirs: a directory a cycle made and Stop left is
// reported, in its kind; one no glob covers is refused; what a failed
// start left is adopted, what another running process uses is not.
func TestCycleLedgerSeesLeakedDirs(t *testing.T) {
	shm, tmp := t.TempDir(), t.TempDir()
	left, used := filepath.Join(tmp, "kubeharness-controlplane-2"), filepath.Join(tmp, "kubeharness-controlplane-3")
	// Another control plane's process, which names a directory it is
	// about to use; it runs before the cycles, so it is not theirs.
	startNaming(t, "other", used)
	l, err := newCycleLedger([]string{filepath.Join(shm, "kubeharness-etcd-*"), filepath.Join(tmp, "kubeharness-controlplane-*")})
	if err != nil {
		t.Fatal(err)
	}
	etcd, pki := filepath.Join(shm, "kubeharness-etcd-1"), filepath.Join(tmp, "kubeharness-controlplane-1")
	for _, d := range []string{etcd, pki} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := l.recordDir(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.recordDir(filepath.Join(tmp, "elsewhere"), 0); err == nil {
		t.Error("a directory no glob covers was recorded")
	}
	r := &Report{}
	if err := l.leaks(nil, r); err != nil {
		t.Fatal(err)
	}
	if len(r.Tmpfs) != 1 || !strings.HasPrefix(r.Tmpfs[0], etcd+" ") || len(r.Temp) != 1 || !strings.HasPrefix(r.Temp[0], pki+" ") || r.Leaks() != 2 {
		t.Errorf("left %s and %s: got tmpfs %q temp %q (%d leaks)", etcd, pki, r.Tmpfs, r.Temp, r.Leaks())
	}
	_ = os.RemoveAll(etcd)
	_ = os.RemoveAll(pki)
	r = &Report{}
	if err := l.leaks(nil, r); err != nil || !r.OK() {
		t.Errorf("nothing left: got %+v, %v", r, err)
	}

	before, err := l.scratch()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{left, used} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.adoptNew(before, 1); err != nil {
		t.Fatal(err)
	}
	if l.dirs[left] == "" || l.dirs[used] != "" {
		t.Errorf("adopted %v; want %s and not %s, which a running process uses", l.dirs, left, used)
	}
}

// TestCycleLedgerSeesLeakedProcesses: a recorded process that still runs,
// a child of one left in its process group after it died, an unreaped
// child and a process naming a recorded directory are all reported.
func TestCycleLedgerSeesLeakedProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kubeharness-controlplane-7")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Started before the ledger: only its command line ties it to a cycle.
	naming := startNaming(t, "naming", dir)

	l, err := newCycleLedger([]string{filepath.Join(filepath.Dir(dir), "kubeharness-controlplane-*")})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.recordDir(dir, 0); err != nil {
		t.Fatal(err)
	}
	if got := l.ours(leaks.Procs()); len(got) != 1 || got[0].PID != naming.Pid() {
		t.Fatalf("before any cycle process: got %v, want only pid %d naming %s", got, naming.Pid(), dir)
	}

	survivor := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"60"}})
	parent, line := proctest.StartReading(t, process.Command{Path: "sh", Args: []string{"-c", "sleep 60 & echo $!; wait"}})
	grandchild, err := strconv.Atoi(line)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.recordProcs(map[int]string{survivor.Pid(): "survivor", parent.Pid(): "parent"}, nil); err != nil {
		t.Fatal(err)
	}
	// The parent dies as a crash would end it (not its group, as Stop
	// does); its child stays behind.
	if err := parent.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	<-parent.Done()
	// Unreaped, unlike what harness/process starts.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zombie.Wait() }()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return mustProc(t, zombie.Process.Pid).Zombie(), nil
	}); err != nil {
		t.Fatalf("true did not exit: %v", err)
	}

	found := map[int]string{}
	for _, p := range l.ours(leaks.Procs()) {
		found[p.PID] = p.String()
	}
	for pid, want := range map[int]string{
		naming.Pid():       "uses " + dir,
		survivor.Pid():     "(survivor)",
		grandchild:         "in the process group of parent",
		zombie.Process.Pid: "a child of this process, a zombie",
	} {
		if !strings.Contains(found[pid], want) {
			t.Errorf("pid %d: reported %q, want %q", pid, found[pid], want)
		}
	}
	if s := found[parent.Pid()]; s != "" {
		t.Errorf("the reaped parent is reported: %s", s)
	}
	if len(found) != 4 {
		t.Errorf("reported %d processes, want 4: %v", len(found), found)
	}
	// Once the cycle ends its process groups no longer count (their
	// numbers may be reused); what it left is followed by pid and start.
	l.endCycle(l.ours(leaks.Procs()))
	if len(l.groups) != 0 {
		t.Errorf("groups after the cycle: %v", l.groups)
	}
	for _, p := range l.ours(leaks.Procs()) {
		if p.PID == grandchild && !strings.Contains(p.String(), "in the process group of parent") {
			t.Errorf("after the cycle: %s", p)
		}
		delete(found, p.PID)
	}
	if len(found) != 0 {
		t.Errorf("after the cycle, no longer reported: %v", found)
	}
}

// TestCycleLedgerSeesLeakedPorts: a port a cycle's process listened on is
// reported while the process holds it, not once it is gone, and not when
// someone else listens on it since.
func TestCycleLedgerSeesLeakedPorts(t *testing.T) {
	helper, port := proctest.StartHelper(t, cycleHelperEnv+"=listen")
	l, err := newCycleLedger(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Not told the port: the ledger finds it through the process's sockets.
	if err := l.recordProcs(map[int]string{helper.Pid(): "helper"}, nil); err != nil {
		t.Fatal(err)
	}
	if l.ports[port] == nil || len(l.ports[port].sockets) != 1 {
		t.Fatalf("recorded ports %v; want %d with its socket", l.ports, port)
	}
	held, _, err := l.heldPorts(leaks.Procs())
	if err != nil || len(held) != 1 || held[0].ln.Port != port || !strings.Contains(held[0].String(), fmt.Sprintf("pid %d", helper.Pid())) {
		t.Errorf("while the helper listens: held %v, %v; want port %d by pid %d", held, err, port, helper.Pid())
	}

	_ = helper.Kill()
	held, notes, err := l.heldPorts(leaks.Procs())
	if err != nil || len(held) != 0 || len(notes) != 0 {
		t.Errorf("after the helper: held %v notes %v, %v; want none", held, notes, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("listening on the freed port %d: %v", port, err)
	}
	defer ln.Close()
	held, notes, err = l.heldPorts(leaks.Procs())
	if err != nil || len(held) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "not the cycles'") {
		t.Errorf("another listener on port %d: held %v notes %v, %v; want a note only", port, held, notes, err)
	}
}

// Beyond Slack, new file descriptors and goroutines are leaks.
func TestReportCountsFDsAndGoroutinesBeyondSlack(t *testing.T) {
	for _, tc := range []struct{ fds, goroutines, want int }{{Slack + 1, Slack + 1, 2}, {Slack, Slack, 0}, {0, Slack + 1, 1}} {
		if r := (&Report{FDs: tc.fds, Goroutines: tc.goroutines}); r.Leaks() != tc.want || r.OK() != (tc.want == 0) {
			t.Errorf("fds %+d goroutines %+d count %d leaks, want %d", tc.fds, tc.goroutines, r.Leaks(), tc.want)
		}
	}
}

func mustProc(t *testing.T, pid int) leaks.Proc {
	t.Helper()
	p, err := leaks.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startNaming starts one process, and only one, whose command line names
// path: a shell blocked in its read builtin on a pipe that stays open until
// the test ends. A shell running an external command would fork first, and
// for a moment its child would carry the same command line.
func startNaming(t *testing.T, name, path string) *process.Process {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	p := proctest.Start(t, process.Command{Path: "sh", Args: []string{"-c", "read -r _", name, path}, Stdin: r})
	_ = r.Close()
	waitMentions(t, p.Pid(), path)
	return p
}

// waitMentions waits until pid's command line (set at its exec) names path.
func waitMentions(t *testing.T, pid int, path string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return mustProc(t, pid).Mentions(path), nil
	}); err != nil {
		t.Fatalf("pid %d never named %s: %v", pid, path, err)
	}
}

// TestRunLeavesNothing runs a few cycles of the tuned control plane
// built in this repository (skipped without one): each start and stop
// succeeds and nothing is left.
func TestRunLeavesNothing(t *testing.T) {
	dir, root, _, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	r, err := Run(t.Context(), Options{Cycles: 3, ControlPlane: controlplane.Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root)}})
	if err != nil {
		t.Fatal(err)
	}
	var details strings.Builder
	r.WriteDetails(&details)
	if !r.OK() || r.Cycles != 3 || len(r.Starts) != 3 || len(r.Stops) != 3 {
		t.Errorf("%s\n%s", r, details.String())
	}
	if !strings.HasPrefix(r.String(), "start/stop cycles: 3, failures 0, leaked: processes 0, listening ports 0, tmpfs dirs 0, temp dirs 0, fds ") {
		t.Errorf("report line: %s", r)
	}
}
