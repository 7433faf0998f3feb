package devenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// Options say where an environment lives and what it runs.
type Options struct {
	// Root is the repository root: versions.yaml, the control-plane
	// binaries below bin/k8s, and the sources of the VirtualMachine image.
	Root string
	// StateDir holds the environment's state file, lock, control socket,
	// kubeconfigs, logs and kubectl; empty is .kubeharness/envtest below
	// Root. One environment runs per state directory.
	StateDir string
	// Version is the Kubernetes version Up is asked for. Up resolves it,
	// through Proxy when set (else the Go module proxy), and hands the
	// supervisor the patch it resolved to (Serve's version).
	Version versions.Selector
	Proxy   versions.Proxy
	// Manager and VMController are the binaries of the manager and the
	// VirtualMachine controller; a restart runs them again from there, so
	// that a rebuilt binary is what runs.
	Manager, VMController string
	// VMDriver is the VirtualMachine controller's driver: for Up, the one
	// asked for (empty: $VM_DRIVER, then docker when a Docker daemon
	// answers, else fake); for Serve, the one Up chose.
	VMDriver string
	// Timeout bounds how long Up waits for the environment to be ready.
	Timeout time.Duration
	// Supervisor is the command line that runs Serve in a process of its
	// own: for kubeharness, its executable and "env", "serve". Up appends
	// --version, --manager, --vm-controller, --vm-driver and --state-dir
	// with the values that process is to hand Serve.
	Supervisor []string
}

// paths is where the environment's files are: StateDir, absolute and with
// symlinks resolved, since the supervisor's processes are recognized by
// that one spelling of it (envMarkerEnv).
func (o Options) paths() (envPaths, error) {
	stateDir := o.StateDir
	if stateDir == "" {
		stateDir = filepath.Join(o.Root, ".kubeharness", "envtest")
	}
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return envPaths{}, err
	}
	return envPaths{dir: resolveExisting(stateDir)}, nil
}

// resolveExisting resolves the symbolic links in the part of the absolute
// path that exists, so that a state directory env up is about to create is
// spelled as it will be once it exists.
func resolveExisting(path string) string {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return resolved
	}
	if parent := filepath.Dir(path); parent != path {
		return filepath.Join(resolveExisting(parent), filepath.Base(path))
	}
	return path
}

// Up starts an environment in the background: it checks the binaries,
// provides kubectl, chooses the VirtualMachine driver and starts the
// supervisor (o.Supervisor, running Serve), then returns once the
// environment is ready, printing how to use it. The state directory must
// be one Up made, or not exist yet, or be empty (see the package
// documentation); Up refuses any other. When one is ready in the
// state directory already, it says so and leaves it; while another Up is
// starting one there, it fails naming that Up's pid.
func Up(ctx context.Context, o Options) error {
	paths, err := o.paths()
	if err != nil {
		return err
	}
	return envUp(ctx, paths, o)
}

// Down stops everything Up started, also after a component or the
// supervisor crashed, and removes the environment's files below the state
// directory (logs stay); with nothing running it says so. It refuses a
// directory that is not a state directory Up made (see the package
// documentation), removing nothing.
func Down(o Options) error {
	paths, err := o.paths()
	if err != nil {
		return err
	}
	return envDown(paths)
}

// Status prints what runs: the supervisor, the control plane's processes,
// the manager and the VirtualMachine controller with their restarts.
func Status(o Options) error {
	paths, err := o.paths()
	if err != nil {
		return err
	}
	return envStatus(paths)
}

// Restart asks the supervisor to restart the named components, "manager"
// or "vm-controller", one by one, and returns once each runs again (the
// manager: once its webhooks admit requests).
func Restart(o Options, components ...string) error {
	paths, err := o.paths()
	if err != nil {
		return err
	}
	return envRestart(paths, components)
}

func envUp(ctx context.Context, paths envPaths, o Options) error {
	root, manager, vmController, timeout := o.Root, o.Manager, o.VMController, o.Timeout
	var err error
	// A directory env up made, or makes now; nothing else is cleaned up
	// or written into.
	if err := prepareStateDir(paths); err != nil {
		return err
	}
	// One environment per state directory: the lock is held from here
	// until the supervisor exits.
	lock, holder, err := lockState(paths)
	if err != nil {
		return err
	}
	if lock == nil {
		if st, err := readState(paths); err == nil && st.Ready && process.Owned(st.SupervisorPID, envMark(paths.dir)) {
			fmt.Fprintf(os.Stderr, "an envtest environment is already running in %s (supervisor pid %d)\n", paths.dir, st.SupervisorPID)
			printUsage(paths, st.VMDriver)
			return nil
		}
		return fmt.Errorf("an envtest environment is already starting or running in %s (pid %d holds %s): `kubeharness env status --state-dir %s` shows it, `kubeharness env down --state-dir %s` stops it",
			paths.dir, holder, paths.lock(), paths.dir, paths.dir)
	}
	// Until the supervisor holds its own copy.
	defer lock.Close()
	if st, err := readState(paths); err == nil {
		fmt.Fprintln(os.Stderr, "cleaning up after an environment whose supervisor is gone")
		cleanupEnv(paths, st)
	} else if _, statErr := os.Lstat(paths.run()); statErr == nil {
		cleanupEnv(paths, &envState{})
	}
	if manager, err = filepath.Abs(manager); err != nil {
		return err
	}
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("manager binary %s not found: run `make manager` or pass --manager", manager)
	}
	// Resolve the version and check the binaries now, not in the
	// background; the supervisor gets the patch they report.
	res, err := binaries.NewResolver(root, os.Stderr)
	if err != nil {
		return err
	}
	if o.Proxy != nil {
		res.Proxy = o.Proxy
	}
	assets, version, err := binaries.Locate(ctx, res, root, o.Version, binaries.Etcd, binaries.KubeAPIServer, binaries.KubeControllerManager)
	if err != nil {
		return err
	}
	if vmController, err = filepath.Abs(vmController); err != nil {
		return err
	}
	if _, err := os.Stat(vmController); err != nil {
		return fmt.Errorf("VirtualMachine controller binary %s not found: run `make vm-controller` or pass --vm-controller", vmController)
	}
	if err := provideKubectl(ctx, root, paths, assets, version); err != nil {
		return err
	}
	vmDriver, err := chooseVMDriver(ctx, o.VMDriver)
	if err != nil {
		return err
	}

	logFile, err := createFile(paths.log())
	if err != nil {
		return err
	}
	defer logFile.Close()
	if len(o.Supervisor) == 0 {
		return errors.New("no supervisor command: Options.Supervisor names the program that runs Serve")
	}
	supervisor, err := process.Command{
		Path: o.Supervisor[0], Name: "the envtest supervisor",
		Args: append(slices.Clone(o.Supervisor[1:]), "--version", version.String(), "--manager", manager,
			"--vm-controller", vmController, "--vm-driver", vmDriver.name, "--state-dir", paths.dir),
		Out: logFile, Dir: root,
		// The mark env down recognizes the supervisor and its processes by.
		Mark: envMark(paths.dir),
		// The lock, as the supervisor's file descriptor 3 (envLockFD).
		ExtraFiles: []*os.File{lock},
		// Its own session: the environment outlives this command and the
		// terminal it ran in.
		Detached: true,
	}.Start()
	if err != nil {
		return err
	}
	// The supervisor holds the lock now; envDown below must be able to
	// take it once the supervisor is gone.
	lock.Close()

	start := time.Now()
	fmt.Fprintf(os.Stderr, "starting envtest %s (supervisor pid %d, log %s)\n", version, supervisor.Pid(), paths.log())
	vmDriver.print(os.Stderr)
	phase := ""
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case <-supervisor.Done():
			return fmt.Errorf("the envtest supervisor exited (%v) before it was ready; last lines of %s:\n%s", supervisor.State(), paths.log(), tail(paths.log(), 20))
		case <-deadline:
			_ = envDown(paths)
			return fmt.Errorf("not ready after %s (last phase: %s); last lines of %s:\n%s", timeout, phase, paths.log(), tail(paths.log(), 20))
		case <-ctx.Done():
			_ = envDown(paths)
			return ctx.Err()
		case <-tick.C:
			st, err := readState(paths)
			if err != nil || st.SupervisorPID != supervisor.Pid() {
				continue
			}
			if st.Phase != phase {
				phase = st.Phase
				fmt.Fprintf(os.Stderr, "  %s (%s)\n", phase, time.Since(start).Round(100*time.Millisecond))
			}
			if st.Ready {
				fmt.Fprintf(os.Stderr, "envtest %s with the kubeharness manager and the VirtualMachine controller (driver %s) is up after %s\n\n",
					version, vmDriver.name, time.Since(start).Round(100*time.Millisecond))
				printUsage(paths, vmDriver.name)
				return nil
			}
		}
	}
}

// provideKubectl links paths.kubectl() to a kubectl of version: the one in
// the binaries' directory assets when it has one of that version, else one
// provided into the repository's store (repo.Store; cached once built).
func provideKubectl(ctx context.Context, root string, paths envPaths, assets string, version versions.Version) error {
	kubectl := filepath.Join(assets, binaries.Kubectl.Name)
	if v, err := binaries.BinaryVersion(ctx, kubectl, binaries.Kubectl); err != nil || v != version.String() {
		dir, err := repo.Store(root).Provide(ctx, version, binaries.Kubectl)
		if err != nil {
			return fmt.Errorf("providing kubectl %s for the environment: %w", version, err)
		}
		kubectl = filepath.Join(dir, binaries.Kubectl.Name)
	}
	kubectl, err := filepath.Abs(kubectl)
	if err != nil {
		return err
	}
	if err := ensureDir(paths.binDir(), 0o755); err != nil {
		return err
	}
	_ = os.Remove(paths.kubectl())
	return os.Symlink(kubectl, paths.kubectl())
}

func printUsage(paths envPaths, vmDriver string) {
	fmt.Printf(`Use it with (kubectl %s is the environment's version):
  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl get pb -A
  kubectl get vms -A
Manager log: %s
VirtualMachine controller log (driver %s): %s
Rebuild and restart the manager and the VirtualMachine controller: make envtest-restart
  (or, after make manager: kubeharness env restart manager --state-dir %s)
`, paths.kubectl(), paths.kubeconfig(), paths.binDir(), paths.managerLog(), vmDriver, paths.vmControllerLog(), paths.dir)
	if vmDriver == driver.DockerDriverName {
		fmt.Printf("The docker driver pulls no image: VirtualMachines without spec.image run %s (built from e2e/images/vm); any other spec.image must be one the daemon has (docker images).\n", vmfixture.VMImage)
	}
	fmt.Printf("Stop it with: make envtest-down (or kubeharness env down --state-dir %s)\n", paths.dir)
}

// envDownWait bounds how long down waits for the supervisor to stop
// everything after SIGTERM, and envLockRelease how long it waits for an
// exiting supervisor to release the lock.
const (
	envDownWait    = 45 * time.Second
	envLockRelease = 10 * time.Second
)

func envDown(paths envPaths) error {
	// Only a state directory env up made: down removes files in it.
	if found, err := requireStateDir(paths); err != nil {
		return err
	} else if !found {
		fmt.Fprintf(os.Stderr, "no envtest environment is running in %s\n", paths.dir)
		return nil
	}
	st, err := readState(paths)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w; remove it if nothing runs", paths.state(), err)
	}
	if st != nil && process.Owned(st.SupervisorPID, envMark(paths.dir)) {
		fmt.Fprintf(os.Stderr, "stopping the envtest supervisor (pid %d)\n", st.SupervisorPID)
		if err := process.StopOwned(st.SupervisorPID, envMark(paths.dir), envDownWait); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the envtest supervisor: %v\n", err)
		}
	}
	// With the supervisor gone the lock is free, unless an env up is
	// still starting one. A process that is exiting (a zombie already, to
	// /proc) may hold it a moment longer: its other threads close its
	// files last.
	lock, holder, err := lockState(paths)
	for deadline := time.Now().Add(envLockRelease); err == nil && lock == nil && time.Now().Before(deadline) &&
		(!process.Alive(holder) || (st != nil && holder == st.SupervisorPID)); {
		time.Sleep(50 * time.Millisecond) // polling a lock, not waiting for cluster state
		lock, holder, err = lockState(paths)
	}
	if err != nil {
		return err
	}
	if lock == nil {
		return fmt.Errorf("an envtest environment is starting in %s (pid %d holds %s): run env down again once env up is done, or stop pid %d",
			paths.dir, holder, paths.lock(), holder)
	}
	defer lock.Close()
	if st == nil {
		if _, err := os.Lstat(paths.run()); err != nil {
			fmt.Fprintln(os.Stderr, "no envtest environment is running")
			return nil
		}
		st = &envState{}
	}
	cleanupEnv(paths, st)
	fmt.Fprintf(os.Stderr, "envtest environment stopped; logs kept in %s\n", paths.dir)
	return nil
}

// cleanupEnv stops what the supervisor did not stop (it crashed, or was
// killed) and removes the environment's files; the caller holds the lock.
// It signals only processes of this state directory (envMark) and
// removes only paths.run() of the directories: st is not trusted.
func cleanupEnv(paths envPaths, st *envState) {
	mark := envMark(paths.dir)
	for _, p := range st.Processes {
		if !process.Owned(p.PID, mark) || !process.Runs(p.PID, p.Exe) {
			continue
		}
		fmt.Fprintf(os.Stderr, "stopping leftover %s (pid %d)\n", p.Name, p.PID)
		if err := process.StopOwned(p.PID, mark, 10*time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "stopping leftover %s: %v\n", p.Name, err)
		}
	}
	for _, dir := range []string{st.EtcdDataDir, st.ControlPlaneDir} {
		if dir != "" && !insideDir(paths.run(), dir) {
			fmt.Fprintf(os.Stderr, "leaving %s alone: the state file names it, but the environment keeps its files in %s\n", dir, paths.run())
		}
	}
	_ = os.RemoveAll(paths.run())
	_ = os.Remove(paths.control())
	for _, f := range []string{paths.state(), paths.kubeconfig(), paths.managerKubeconfig(), paths.vmControllerKubeconfig()} {
		_ = os.Remove(f)
	}
}

// insideDir reports whether path is below dir, lexically.
func insideDir(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func envStatus(paths envPaths) error {
	if found, err := requireStateDir(paths); err != nil {
		return err
	} else if !found {
		fmt.Println("no envtest environment is running")
		return nil
	}
	st, err := readState(paths)
	if errors.Is(err, os.ErrNotExist) {
		if holder, held := lockHolder(paths); held {
			fmt.Printf("an envtest environment is starting (pid %d holds %s)\n", holder, paths.lock())
			return nil
		}
		fmt.Println("no envtest environment is running")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Printf("supervisor pid %d: %s\nphase: %s\nAPI server: %s\nkubeconfig: %s\nkubectl: %s\nVirtualMachine driver: %s\n",
		st.SupervisorPID, aliveWord(process.Owned(st.SupervisorPID, envMark(paths.dir))), st.Phase, st.Host, paths.kubeconfig(), st.Kubectl, st.VMDriver)
	for _, p := range st.Processes {
		line := fmt.Sprintf("%-23s pid %-7d %s", p.Name, p.PID, aliveWord(process.Owned(p.PID, envMark(paths.dir)) && process.Runs(p.PID, p.Exe)))
		if p.Name == "manager" || p.Name == "vm-controller" {
			line += fmt.Sprintf(", restarts %d", p.Restarts)
		}
		fmt.Println(line)
	}
	return nil
}

func aliveWord(ok bool) string {
	if ok {
		return "running"
	}
	return "not running"
}

// envRestartTimeout bounds how long restart waits for the supervisor to
// restart a component (the manager: until its webhooks admit requests).
const envRestartTimeout = deploy.WebhookReadyTimeout + operatortest.ManagerStopTimeout + 30*time.Second

// envRestart asks the supervisor to restart the components names, one by
// one, and returns once each runs again.
func envRestart(paths envPaths, names []string) error {
	found, err := requireStateDir(paths)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no envtest environment is running in %s: start one with make envtest-up", paths.dir)
	}
	st, err := readState(paths)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no envtest environment is running in %s: start one with make envtest-up", paths.dir)
	}
	if err != nil {
		return err
	}
	if !st.Ready || !process.Owned(st.SupervisorPID, envMark(paths.dir)) {
		return fmt.Errorf("the envtest environment in %s is not ready (phase: %s): see kubeharness env status", paths.dir, st.Phase)
	}
	for _, name := range names {
		fmt.Fprintf(os.Stderr, "restarting %s\n", name)
		conn, err := net.DialTimeout("unix", paths.control(), 5*time.Second)
		if err != nil {
			return fmt.Errorf("reaching the envtest supervisor (pid %d) at %s: %w", st.SupervisorPID, paths.control(), err)
		}
		_ = conn.SetDeadline(time.Now().Add(envRestartTimeout))
		_, err = fmt.Fprintf(conn, "restart %s\n", name)
		var reply string
		if err == nil {
			reply, err = bufio.NewReader(io.LimitReader(conn, maxControlReply)).ReadString('\n')
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("restarting %s: no answer from the envtest supervisor (pid %d): %w; see %s", name, st.SupervisorPID, err, paths.log())
		}
		if msg, failed := strings.CutPrefix(strings.TrimSpace(reply), "error: "); failed {
			return fmt.Errorf("restarting %s: %s", name, msg)
		}
		fmt.Fprintf(os.Stderr, "%s restarted\n", name)
	}
	return nil
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
