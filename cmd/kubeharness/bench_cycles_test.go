package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

// startOwn starts a command in a process group of its own, as the control
// plane starts its processes, and kills that group when the test ends.
func startOwn(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

func TestParseProcNetTCP(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the samples are from a little-endian machine")
	}
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 20 4 30 10 -1
   3: 0F02000A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 18 1 0000000000000000 100 0 0 10 0
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0948 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2404934 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0
`
	got, err := parseProcNetTCP(strings.NewReader(tcp))
	if err != nil {
		t.Fatal(err)
	}
	got6, err := parseProcNetTCP(strings.NewReader(tcp6))
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, ln := range append(got, got6...) {
		s = append(s, fmt.Sprintf("%s inode %d", net.JoinHostPort(ln.ip.String(), strconv.Itoa(ln.port)), ln.inode))
	}
	// The established connection (st 01) is no listener.
	want := []string{"127.0.0.1:8080 inode 4242", "0.0.0.0:22 inode 17", "10.0.2.15:80 inode 18", "[::1]:2376 inode 2404934", "[::]:8081 inode 77"}
	if strings.Join(s, ", ") != strings.Join(want, ", ") {
		t.Errorf("parsed\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	if _, err := parseProcNetTCP(strings.NewReader("header\n 0: 7F:1F90 00000000:0000 0A 0 0 0 0 0 1 1\n")); err == nil {
		t.Error("a 1-byte address parsed")
	}
}

// TestLoopbackListenersSeesOurs: the live tables hold a listener this
// process opens, with the socket's inode.
func TestLoopbackListenersSeesOurs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ls, err := loopbackListeners()
	if err != nil {
		t.Fatal(err)
	}
	mine := socketInodes(os.Getpid())
	for _, l := range ls {
		if l.port == port && mine[l.inode] {
			return
		}
	}
	t.Errorf("port %d with one of our sockets %v not among the listeners %v", port, mine, ls)
}

func TestParseProcStat(t *testing.T) {
	// comm may hold spaces and parentheses.
	p, err := parseProcStat("4321 (we (ird) name) S 1 4300 4300 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if p.pid != 4321 || p.state != "S" || p.ppid != 1 || p.pgid != 4300 || p.start != 987654 {
		t.Errorf("parsed %+v", p)
	}
	if _, err := parseProcStat("4321 (short) S 1 2"); err == nil {
		t.Error("a short stat parsed")
	}
	self, err := readProc(os.Getpid())
	if err != nil || self.ppid != os.Getppid() || self.pgid != syscall.Getpgrp() || self.start == 0 || len(self.cmdline) == 0 {
		t.Errorf("readProc(self) = %+v, %v", self, err)
	}
}

func TestMentions(t *testing.T) {
	p := procInfo{cmdline: []string{"etcd", "--data-dir=/dev/shm/kubeharness-etcd-123", "--cert-dir", "/tmp/kubeharness-controlplane-9/pki"}}
	for path, want := range map[string]bool{
		"/dev/shm/kubeharness-etcd-123":    true,
		"/dev/shm/kubeharness-etcd-12":     false, // another directory's prefix
		"/tmp/kubeharness-controlplane-9":  true,  // a file below it
		"/tmp/kubeharness-controlplane-99": false,
	} {
		if got := p.mentions(path); got != want {
			t.Errorf("mentions(%s) = %v, want %v", path, got, want)
		}
	}
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
	r, err := l.leaks(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.tmpfs) != 1 || !strings.HasPrefix(r.tmpfs[0], etcd+" ") || len(r.temp) != 1 || !strings.HasPrefix(r.temp[0], pki+" ") || r.count() != 2 {
		t.Errorf("left %s and %s: got tmpfs %q temp %q (count %d)", etcd, pki, r.tmpfs, r.temp, r.count())
	}
	_ = os.RemoveAll(etcd)
	_ = os.RemoveAll(pki)
	if r, err = l.leaks(nil); err != nil || r.leaked() {
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
	if got := l.ours(listProcs()); len(got) != 1 || got[0].pid != naming.Process.Pid {
		t.Fatalf("before any cycle process: got %v, want only pid %d naming %s", got, naming.Process.Pid, dir)
	}

	survivor := exec.Command("sleep", "60")
	startOwn(t, survivor)
	parent := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startOwn(t, parent)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.recordProcs(map[int]string{survivor.Process.Pid: "survivor", parent.Process.Pid: "parent"}, nil); err != nil {
		t.Fatal(err)
	}
	// The parent dies as Stop would end it; its child stays behind.
	_ = parent.Process.Kill()
	_ = parent.Wait()
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zombie.Wait() }()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return mustProc(t, zombie.Process.Pid).state == "Z", nil
	}); err != nil {
		t.Fatalf("true did not exit: %v", err)
	}

	found := map[int]string{}
	for _, p := range l.ours(listProcs()) {
		found[p.pid] = p.String()
	}
	for pid, want := range map[int]string{
		naming.Process.Pid:   "uses " + dir,
		survivor.Process.Pid: "(survivor)",
		grandchild:           "in the process group of parent",
		zombie.Process.Pid:   "a child of this process, a zombie",
	} {
		if !strings.Contains(found[pid], want) {
			t.Errorf("pid %d: reported %q, want %q", pid, found[pid], want)
		}
	}
	if s := found[parent.Process.Pid]; s != "" {
		t.Errorf("the reaped parent is reported: %s", s)
	}
	if len(found) != 4 {
		t.Errorf("reported %d processes, want 4: %v", len(found), found)
	}
	// Once the cycle ends its process groups no longer count (their
	// numbers may be reused); what it left is followed by pid and start.
	l.endCycle(l.ours(listProcs()))
	if len(l.groups) != 0 {
		t.Errorf("groups after the cycle: %v", l.groups)
	}
	for _, p := range l.ours(listProcs()) {
		if p.pid == grandchild && !strings.Contains(p.String(), "in the process group of parent") {
			t.Errorf("after the cycle: %s", p)
		}
		delete(found, p.pid)
	}
	if len(found) != 0 {
		t.Errorf("after the cycle, no longer reported: %v", found)
	}
}

// TestCycleLedgerSeesLeakedPorts: a port a cycle's process listened on is
// reported while the process holds it, not once it is gone, and not when
// someone else listens on it since.
func TestCycleLedgerSeesLeakedPorts(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self)
	helper.Env = append(os.Environ(), cycleHelperEnv+"=listen")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startOwn(t, helper)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper: %q", line)
	}
	l, err := newCycleLedger(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Not told the port: the ledger finds it through the process's sockets.
	if err := l.recordProcs(map[int]string{helper.Process.Pid: "helper"}, nil); err != nil {
		t.Fatal(err)
	}
	if l.ports[port] == nil || len(l.ports[port].sockets) != 1 {
		t.Fatalf("recorded ports %v; want %d with its socket", l.ports, port)
	}
	held, _, err := l.heldPorts(listProcs())
	if err != nil || len(held) != 1 || held[0].ln.port != port || !strings.Contains(held[0].String(), fmt.Sprintf("pid %d", helper.Process.Pid)) {
		t.Errorf("while the helper listens: held %v, %v; want port %d by pid %d", held, err, port, helper.Process.Pid)
	}

	_ = helper.Process.Kill()
	_ = helper.Wait()
	held, notes, err := l.heldPorts(listProcs())
	if err != nil || len(held) != 0 || len(notes) != 0 {
		t.Errorf("after the helper: held %v notes %v, %v; want none", held, notes, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("listening on the freed port %d: %v", port, err)
	}
	defer ln.Close()
	held, notes, err = l.heldPorts(listProcs())
	if err != nil || len(held) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "not the cycles'") {
		t.Errorf("another listener on port %d: held %v notes %v, %v; want a note only", port, held, notes, err)
	}
}

// TestSelfStateSeesLeaks: new file descriptors and goroutines are counted
// and named, and beyond cycleSlack they are leaks.
func TestSelfStateSeesLeaks(t *testing.T) {
	base, err := readSelfState()
	if err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	for i := range cycleSlack + 1 {
		f, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("leak-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	block := make(chan struct{})
	for range cycleSlack + 1 {
		go leakedGoroutine(block)
	}
	defer func() {
		close(block)
		for _, f := range files {
			f.Close()
		}
	}()
	// The goroutines are told by their stacks once all of them block.
	want := fmt.Sprintf("%+d at %s", cycleSlack+1, "github.com/kubeharness/kubeharness/cmd/kubeharness.leakedGoroutine")
	var now *selfState
	// Polled up to 10 s; checked below whether or not they all blocked.
	_ = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if now, err = readSelfState(); err != nil {
			return false, err
		}
		return strings.Contains(strings.Join(newGoroutines(base.stacks, now.stacks), "\n"), want), nil
	})
	if now == nil {
		t.Fatal("could not read this process's state")
	}
	// Other tests' goroutines and descriptors may end meanwhile: only
	// the listed ones are checked.
	leakedFDs := 0
	for _, fd := range newFDs(base.fds, now.fds) {
		if strings.Contains(fd, string(filepath.Separator)+"leak-") {
			leakedFDs++
		}
	}
	if leakedFDs != cycleSlack+1 {
		t.Errorf("new fds %v; want the %d files", newFDs(base.fds, now.fds), cycleSlack+1)
	}
	gs := strings.Join(newGoroutines(base.stacks, now.stacks), "\n")
	if !strings.Contains(gs, want) {
		t.Errorf("new goroutines:\n%s\nwant %d in leakedGoroutine", gs, cycleSlack+1)
	}
	for _, tc := range []struct{ fds, goroutines, want int }{{cycleSlack + 1, cycleSlack + 1, 2}, {cycleSlack, cycleSlack, 0}, {0, cycleSlack + 1, 1}} {
		if r := (&cycleLeaks{fds: tc.fds, goroutines: tc.goroutines}); r.count() != tc.want || r.leaked() != (tc.want > 0) {
			t.Errorf("fds %+d goroutines %+d count %d leaks, want %d", tc.fds, tc.goroutines, r.count(), tc.want)
		}
	}
}

func leakedGoroutine(block chan struct{}) { <-block }

func TestParseBenchOnly(t *testing.T) {
	run, err := parseBenchOnly("")
	if err != nil || !run["start"] || !run["cycles"] || !run["env"] || !run["suite"] {
		t.Errorf("no --only: %v, %v; want every section", run, err)
	}
	run, err = parseBenchOnly("cycles,suite")
	if err != nil || run["start"] || !run["cycles"] || run["env"] || !run["suite"] {
		t.Errorf("--only=cycles,suite: %v, %v", run, err)
	}
	for _, args := range [][]string{{"bench", "--only=cycles,bogus"}, {"bench", "--cycles=-1"}} {
		out, errOut, code := kubeharness(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "kubeharness bench: "+args[1]) {
			t.Errorf("kubeharness %q: exit status %d, stdout %q, stderr %q; want 2 and a usage error", args, code, out, errOut)
		}
	}
}

func mustProc(t *testing.T, pid int) procInfo {
	t.Helper()
	p, err := readProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitMentions waits until pid's command line (set at its exec) names path.
// startNaming starts one process, and only one, whose command line names
// path: a shell blocked in its read builtin on a pipe that stays open until
// the test ends. A shell running an external command would fork first, and
// for a moment its child would carry the same command line.
func startNaming(t *testing.T, name, path string) *exec.Cmd {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	cmd := exec.Command("sh", "-c", "read -r _", name, path)
	cmd.Stdin = r
	startOwn(t, cmd)
	_ = r.Close()
	waitMentions(t, cmd.Process.Pid, path)
	return cmd
}

func waitMentions(t *testing.T, pid int, path string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return mustProc(t, pid).mentions(path), nil
	}); err != nil {
		t.Fatalf("pid %d never named %s: %v", pid, path, err)
	}
}
