package devenv

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/process"

	"github.com/kubeharness/kubeharness/internal/testutil"
)

// startSleep runs sleep in the background with env added to this
// process's environment, and kills it at the end of the test.
func startSleep(t *testing.T, env ...string) (pid int, exe string) {
	t.Helper()
	p, err := process.Command{Path: "sleep", Args: []string{"600"}, Env: env}.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(path); err != nil {
		t.Fatal(err)
	}
	return p.Pid(), exe
}

// goneProcess returns the pid of a process that has exited and been reaped.
func goneProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// writeTestState writes st as dir's state file.
func writeTestState(t *testing.T, dir string, st envState) {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// someoneElsesDir is a directory with a file in it, outside any state
// directory.
func someoneElsesDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func expectRunning(t *testing.T, pid int, what string) {
	t.Helper()
	if !process.Alive(pid) {
		t.Errorf("%s (pid %d) was signalled: the state file named it, but the environment never started it", what, pid)
	}
}

func expectDirKept(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
		t.Errorf("%s was removed: the state file named it, but it is no directory of the environment's: %v", dir, err)
	}
}

// A state file is not trusted: env down signals only processes started
// for its state directory, and removes no directory but the environment's
// own below it, whatever pids and paths the file names.
func TestEnvDownLeavesWhatTheStateFileNamesButTheEnvironmentNeverStarted(t *testing.T) {
	paths := newStateDir(t)
	stranger, exe := startSleep(t)
	etcd, cp := someoneElsesDir(t), someoneElsesDir(t)
	writeTestState(t, paths.dir, envState{
		SupervisorPID: stranger, EtcdDataDir: etcd, ControlPlaneDir: cp,
		Processes: []envProc{{Name: "etcd", PID: stranger, Exe: exe}},
	})
	if err := testutil.WithoutStderr(t, func() error { return envDown(paths) }); err != nil {
		t.Fatal(err)
	}
	expectRunning(t, stranger, "a process of someone else")
	expectDirKept(t, etcd)
	expectDirKept(t, cp)
	if _, err := os.Stat(paths.state()); !os.IsNotExist(err) {
		t.Errorf("env down left the state file: %v", err)
	}
}

// env up cleans up after a supervisor that is gone with the same distrust.
func TestEnvUpCleanupLeavesDirectoriesTheStateFileNames(t *testing.T) {
	paths := newStateDir(t)
	etcd, cp := someoneElsesDir(t), someoneElsesDir(t)
	writeTestState(t, paths.dir, envState{SupervisorPID: goneProcess(t), EtcdDataDir: etcd, ControlPlaneDir: cp})
	err := testutil.WithoutStderr(t, func() error {
		return envUp(context.Background(), paths, Options{Root: t.TempDir(), Manager: "/nonexistent/manager", Timeout: time.Minute})
	})
	if err == nil || !strings.Contains(err.Error(), "manager binary /nonexistent/manager not found") {
		t.Fatalf("env up: %v, want it to stop at the missing manager", err)
	}
	expectDirKept(t, etcd)
	expectDirKept(t, cp)
}

// What the environment did start goes: its leftover processes (marked with
// the state directory) and its directory of files.
func TestEnvDownStopsTheEnvironmentsLeftovers(t *testing.T) {
	paths := newStateDir(t)
	leftover, exe := startSleep(t, envMark(paths.dir))
	// Marked for another state directory: not this environment's.
	other, otherExe := startSleep(t, envMark(t.TempDir()))
	etcd := filepath.Join(paths.run(), "kubeharness-etcd-1")
	if err := os.MkdirAll(etcd, 0o700); err != nil {
		t.Fatal(err)
	}
	writeTestState(t, paths.dir, envState{
		SupervisorPID: goneProcess(t), EtcdDataDir: etcd,
		Processes: []envProc{{Name: "kube-apiserver", PID: leftover, Exe: exe}, {Name: "etcd", PID: other, Exe: otherExe}},
	})
	if err := testutil.WithoutStderr(t, func() error { return envDown(paths) }); err != nil {
		t.Fatal(err)
	}
	if process.Alive(leftover) {
		t.Errorf("the environment's leftover kube-apiserver (pid %d) still runs after env down", leftover)
	}
	expectRunning(t, other, "another state directory's process")
	if _, err := os.Stat(paths.run()); !os.IsNotExist(err) {
		t.Errorf("env down left %s: %v", paths.run(), err)
	}
}

// holdLock takes dir's lock as a running env up or supervisor does, with
// pid written in it.
func holdLock(t *testing.T, dir string, pid int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "env.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strconv.Itoa(pid) + "\n"); err != nil {
		t.Fatal(err)
	}
}

// Two env up at once: the second says an environment is starting, with
// the pid of the one starting it, and starts nothing.
func TestEnvUpRefusesWhileAnotherStartsOne(t *testing.T) {
	paths := newStateDir(t)
	// The holder is a live process, as a starting env up is.
	holder := os.Getpid()
	holdLock(t, paths.dir, holder)
	manager := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(manager, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := testutil.WithoutStderr(t, func() error {
		return envUp(context.Background(), paths, Options{Root: t.TempDir(), Manager: manager, VMController: manager, Timeout: time.Minute})
	})
	if err == nil || !strings.Contains(err.Error(), "already starting or running in "+paths.dir+" (pid "+strconv.Itoa(holder)+" holds") {
		t.Fatalf("a second env up: %v; want it to say an environment is starting, with the pid holding the lock", err)
	}
	if _, err := os.Stat(paths.log()); !os.IsNotExist(err) {
		t.Errorf("the second env up started a supervisor (it wrote %s)", paths.log())
	}
	// env down does not clean up under a starting env up either.
	if err := testutil.WithoutStderr(t, func() error { return envDown(paths) }); err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(holder)) {
		t.Errorf("env down while env up starts: %v; want an error naming pid %d", err, holder)
	}
}

// A ready environment: env up says so and succeeds, leaving it.
func TestEnvUpLeavesARunningEnvironment(t *testing.T) {
	paths := newStateDir(t)
	supervisor, _ := startSleep(t, envMark(paths.dir))
	holdLock(t, paths.dir, supervisor)
	writeTestState(t, paths.dir, envState{SupervisorPID: supervisor, Ready: true, Phase: "ready"})
	if err := testutil.WithoutStdout(t, func() error {
		return testutil.WithoutStderr(t, func() error {
			return envUp(context.Background(), paths, Options{Root: t.TempDir(), Manager: "/nonexistent/manager", Timeout: time.Minute})
		})
	}); err != nil {
		t.Fatalf("env up with an environment running: %v", err)
	}
	expectRunning(t, supervisor, "the running environment's supervisor")
}

// lockState: the first taker holds the lock; a second one learns its pid.
func TestLockState(t *testing.T) {
	paths := newStateDir(t)
	lock, _, err := lockState(paths)
	if err != nil || lock == nil {
		t.Fatalf("lockState: %v, %v", lock, err)
	}
	again, holder, err := lockState(paths)
	if err != nil || again != nil || holder != os.Getpid() {
		t.Errorf("lockState while held: %v, %d, %v; want no lock and holder %d", again, holder, err, os.Getpid())
	}
	if pid, held := lockHolder(paths); !held || pid != os.Getpid() {
		t.Errorf("lockHolder: %d, %v", pid, held)
	}
	lock.Close()
	if _, held := lockHolder(paths); held {
		t.Error("lockHolder: held after the holder closed it")
	}
}

func TestInsideDir(t *testing.T) {
	for path, want := range map[string]bool{
		"/s/run/etcd": true, "/s/run/a/b": true,
		"/s/run": false, "/s/runner": false, "/s/run/../x": false, "/etc": false, "/s/run/..": false,
	} {
		if got := insideDir("/s/run", path); got != want {
			t.Errorf("insideDir(/s/run, %s) = %v, want %v", path, got, want)
		}
	}
}
