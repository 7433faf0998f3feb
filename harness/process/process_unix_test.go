//go:build unix

package process_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/process"
)

// termFileEnv names the file the "parent-term" helper's shell writes to
// when it gets SIGTERM.
const termFileEnv = "KUBEHARNESS_TEST_PROCESS_TERM_FILE"

func init() {
	// parent starts sleep through Command.Start, prints its pid and waits
	// to be killed.
	helpers["parent"] = func() {
		p, err := process.Command{Path: "sleep", Args: []string{"600"}}.Start()
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(p.Pid())
		for {
			time.Sleep(time.Hour) // until the test kills this process
		}
	}
	// parent-term is parent with DeathSignal SIGTERM, and a shell that
	// writes "term" to $KUBEHARNESS_TEST_PROCESS_TERM_FILE when it gets it.
	// The shell prints its pid itself, once its trap is set.
	helpers["parent-term"] = func() {
		_, err := process.Command{
			Path: "sh", Args: []string{"-c", `trap 'kill $! 2>/dev/null; echo term >"$` + termFileEnv + `"; exit 0' TERM; echo $$; sleep 600 & wait`},
			DeathSignal: syscall.SIGTERM, Out: os.Stdout,
		}.Start()
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		for {
			time.Sleep(time.Hour) // until the test kills this process
		}
	}
}

// deathModes are the two ways a started process dies with this one: as
// the system does it (Linux's parent-death signal, the watchdog
// elsewhere), and through the watchdog (EnvWatchdog), which is what macOS
// does, run on Linux too.
var deathModes = []struct {
	name string
	env  []string
}{
	{"as the system does", nil},
	{"watchdog", []string{process.EnvWatchdog + "=1"}},
}

// The process goes when its parent goes, however the parent goes.
func TestDeathSignal(t *testing.T) {
	for _, mode := range deathModes {
		t.Run(mode.name, func(t *testing.T) {
			parent, child := proctest.StartHelper(t, append([]string{helperEnv + "=parent"}, mode.env...)...)
			if !process.Alive(child) {
				t.Fatalf("the helper's sleep (pid %d) is not running", child)
			}
			if err := parent.Kill(); err != nil {
				t.Fatal(err)
			}
			if !process.WaitGone(child, 10*time.Second) {
				t.Errorf("the helper's sleep (pid %d) outlived the helper", child)
			}
		})
	}
}

// A DeathSignal of SIGTERM is what the process gets: it can end as on
// Stop.
func TestDeathSignalTERM(t *testing.T) {
	for _, mode := range deathModes {
		t.Run(mode.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "term")
			parent, child := proctest.StartHelper(t, append([]string{helperEnv + "=parent-term", termFileEnv + "=" + file}, mode.env...)...)
			if err := parent.Kill(); err != nil {
				t.Fatal(err)
			}
			if !process.WaitGone(child, 10*time.Second) {
				t.Fatalf("the helper's shell (pid %d) outlived the helper", child)
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != "term\n" {
				t.Errorf("the shell wrote %q (%v); want term: it got SIGTERM", got, err)
			}
		})
	}
}

// The watchdog leads the process's group while the process runs, goes with
// it on Stop, and when the process exits by itself goes without signalling
// what the process left in the group.
func TestWatchdog(t *testing.T) {
	t.Setenv(process.EnvWatchdog, "1")
	p := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}})
	wd := process.WatchdogPid(p)
	if pgid, err := unix.Getpgid(p.Pid()); wd == 0 || err != nil || pgid != wd || p.Pgid() != wd {
		t.Fatalf("the sleep is in group %d (%v), Pgid %d; want the group its watchdog (pid %d) leads", pgid, err, p.Pgid(), wd)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Error(err)
	}
	if !process.WaitGone(wd, 10*time.Second) {
		t.Errorf("the watchdog (pid %d) outlived Stop", wd)
	}

	if d := process.WatchdogPid(proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}, Detached: true})); d != 0 {
		t.Errorf("a detached process has a watchdog (pid %d); want none, it is to outlive this process", d)
	}

	// The shell exits at once; its sleep stays in the group.
	sh, line := proctest.StartReading(t, process.Command{Path: "sh", Args: []string{"-c", "sleep 600 & echo $!"}})
	left, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("the shell printed %q, not a pid", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(left, syscall.SIGKILL) })
	wd = process.WatchdogPid(sh)
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	if process.Alive(wd) {
		t.Errorf("the watchdog (pid %d) is there after its process was reaped", wd)
	}
	if !process.Alive(left) {
		t.Errorf("the sleep the shell left (pid %d) was ended when the shell's watchdog went", left)
	}
}

// A process is in a group of its own, which it leads unless a watchdog
// does; a detached one leads a session of its own.
func TestGroupAndSession(t *testing.T) {
	for _, tc := range []struct {
		name     string
		detached bool
	}{{"in its own group", false}, {"detached", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}, Detached: tc.detached})
			pgid, err := unix.Getpgid(p.Pid())
			if err != nil {
				t.Fatal(err)
			}
			sid, err := unix.Getsid(p.Pid())
			if err != nil {
				t.Fatal(err)
			}
			if pgid != p.Pgid() || p.Pgid() != cmp.Or(process.WatchdogPid(p), p.Pid()) || (sid == p.Pid()) != tc.detached {
				t.Errorf("pid %d: group %d, session %d", p.Pid(), pgid, sid)
			}
		})
	}
}

func TestStartRunsTheCommand(t *testing.T) {
	var out bytes.Buffer
	p := proctest.Start(t, process.Command{
		Path: "sh", Args: []string{"-c", `echo "out $A $M"; echo err >&2; exit 3`}, Name: "the shell",
		Out: &out, Env: []string{"A=env"}, Mark: "M=mark",
	})
	err := p.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.HasPrefix(err.Error(), "the shell (sh) exited: ") {
		t.Errorf("Wait: %v; want the shell's exit status 3, named", err)
	}
	if got := out.String(); got != "out env mark\nerr\n" {
		t.Errorf("output %q; want both streams, with Env and Mark set", got)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done is open after Wait")
	}
	if p.State() == nil || p.State().ExitCode() != 3 || p.Err() == nil {
		t.Errorf("State %v, Err %v after exit 3", p.State(), p.Err())
	}
	if c := p.Command(); c.Path != "sh" || c.Mark != "M=mark" || len(c.Args) != 2 {
		t.Errorf("Command() = %+v", c)
	}
}

func TestStartFailsForAMissingBinary(t *testing.T) {
	_, err := process.Command{Path: "/nonexistent/etcd"}.Start()
	if err == nil || !strings.HasPrefix(err.Error(), "starting etcd: ") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start: %v; want a wrapped not-found error naming etcd", err)
	}
}

func TestErrIsNilWhileRunningAndAfterStatus0(t *testing.T) {
	p := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}})
	if p.Err() != nil || p.State() != nil {
		t.Errorf("running: Err %v, State %v", p.Err(), p.State())
	}
	q := proctest.Start(t, process.Command{Path: "true"})
	if err := q.Wait(); err != nil {
		t.Errorf("true: %v", err)
	}
}

// A process that ignores SIGTERM is killed after the grace period, with
// what it started in its group.
func TestStopKillsTheGroupAfterGrace(t *testing.T) {
	p, line := proctest.StartReading(t, process.Command{Path: "sh", Args: []string{"-c", `trap "" TERM; sleep 600 & echo $!; wait`}})
	child, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("child pid %q", line)
	}
	err = p.Stop(100 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 100ms of SIGTERM and was killed") {
		t.Errorf("Stop: %v; want it to say the shell was killed", err)
	}
	if st := p.State(); st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the shell ended as %v; want killed", st)
	}
	if !process.WaitGone(child, 10*time.Second) {
		t.Errorf("the shell's child (pid %d) outlived Stop", child)
	}
}

// A paused process is continued, so it acts on SIGTERM within the grace.
func TestStopEndsAPausedProcess(t *testing.T) {
	p := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}})
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(time.Minute); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if st := p.State(); st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("sleep ended as %v; want by SIGTERM", st)
	}
	if err := p.Stop(time.Minute); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

func TestKill(t *testing.T) {
	p := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}})
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if st := p.State(); st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("sleep ended as %v; want killed", st)
	}
	if process.Alive(p.Pid()) {
		t.Errorf("pid %d is alive after Kill", p.Pid())
	}
	if err := p.Signal(syscall.SIGCONT); err == nil {
		t.Error("signalling a reaped process succeeded")
	}
}

func TestWaitHTTP(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "never", http.StatusServiceUnavailable)
	}))
	defer never.Close()

	p := proctest.Start(t, process.Command{Path: "sleep", Args: []string{"600"}})
	var seen []int
	if err := p.WaitHTTP(t.Context(), srv.Client(), srv.URL, func(status int, _ []byte) { seen = append(seen, status) }); err != nil {
		t.Errorf("WaitHTTP: %v", err)
	}
	if fmt.Sprint(seen) != "[503 503 200]" {
		t.Errorf("observed %v", seen)
	}

	// The context ends once the second answer is in: WaitHTTP returns the
	// context's error with that answer, whatever the machine's speed.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	answers := 0
	endAfterTwo := func(int, []byte) {
		if answers++; answers == 2 {
			cancel()
		}
	}
	if err := p.WaitHTTP(ctx, never.Client(), never.URL, endAfterTwo); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "503 Service Unavailable: never") || answers != 2 {
		t.Errorf("WaitHTTP past its context: %v after %d answers; want the context's end and the last answer, after 2", err, answers)
	}

	gone := proctest.Start(t, process.Command{Path: "sh", Args: []string{"-c", "exit 7"}})
	if err := gone.WaitHTTP(t.Context(), never.Client(), never.URL, nil); err == nil || !strings.Contains(err.Error(), "sh exited (exit status 7)") {
		t.Errorf("WaitHTTP on a process that exits: %v", err)
	}
}

func TestAliveAndWaitGone(t *testing.T) {
	if !process.Alive(os.Getpid()) || process.Alive(0) || process.Alive(-1) {
		t.Error("Alive is wrong about this process, 0 or -1")
	}
	p := proctest.Start(t, process.Command{Path: "true"})
	_ = p.Wait()
	if process.Alive(p.Pid()) || !process.WaitGone(p.Pid(), time.Second) {
		t.Errorf("pid %d of a reaped process is alive", p.Pid())
	}
	if process.WaitGone(os.Getpid(), 100*time.Millisecond) {
		t.Error("WaitGone says this process is gone")
	}
}
