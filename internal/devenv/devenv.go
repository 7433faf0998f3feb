package devenv

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/testenv"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// envState is .kubeharness/envtest/state.json: what `env up` started, so that
// `env down` can stop all of it even after the supervisor died. Nothing in
// it is trusted: env down signals only the processes whose environment
// carries the state directory (envMark) and removes only the fixed
// directories below the state directory (envPaths.run).
type envState struct {
	SupervisorPID   int       `json:"supervisorPID"`
	Phase           string    `json:"phase"`
	Ready           bool      `json:"ready"`
	Error           string    `json:"error,omitempty"`
	Version         string    `json:"version,omitempty"`
	Host            string    `json:"host,omitempty"`
	EtcdDataDir     string    `json:"etcdDataDir,omitempty"`
	ControlPlaneDir string    `json:"controlPlaneDir,omitempty"`
	VMDriver        string    `json:"vmDriver,omitempty"`
	Kubectl         string    `json:"kubectl,omitempty"`
	Processes       []envProc `json:"processes,omitempty"`
}

type envProc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Exe  string `json:"exe"`
	// Restarts counts how often the supervisor restarted the process
	// after it exited (the manager and the VirtualMachine controller).
	Restarts int `json:"restarts,omitempty"`
}

// setProcess records that name runs as pid (executable exe), keeping its
// restart count.
func (st *envState) setProcess(name string, pid int, exe string) {
	for i := range st.Processes {
		if st.Processes[i].Name == name {
			st.Processes[i].PID, st.Processes[i].Exe = pid, exe
			return
		}
	}
	st.Processes = append(st.Processes, envProc{Name: name, PID: pid, Exe: exe})
}

// setRestarts records name's restart count.
func (st *envState) setRestarts(name string, n int) {
	for i := range st.Processes {
		if st.Processes[i].Name == name {
			st.Processes[i].Restarts = n
		}
	}
}

type envPaths struct{ dir string }

func (p envPaths) state() string      { return filepath.Join(p.dir, "state.json") }
func (p envPaths) kubeconfig() string { return filepath.Join(p.dir, "kubeconfig") }
func (p envPaths) log() string        { return filepath.Join(p.dir, "env.log") }
func (p envPaths) managerLog() string { return filepath.Join(p.dir, "manager.log") }
func (p envPaths) managerKubeconfig() string {
	return filepath.Join(p.dir, "manager.kubeconfig")
}
func (p envPaths) vmControllerLog() string { return filepath.Join(p.dir, "vm-controller.log") }
func (p envPaths) vmControllerKubeconfig() string {
	return filepath.Join(p.dir, "vm-controller.kubeconfig")
}

// lock is the file whose exclusive lock (flock) says an environment is
// starting or running in the state directory: env up takes it and hands
// it to the supervisor, which holds it for as long as it runs. It holds
// the holder's pid, for messages.
func (p envPaths) lock() string { return filepath.Join(p.dir, "env.lock") }

// run is the one directory the environment's files go below (the control
// plane's certificates and etcd's data): env down removes it, and no other
// directory.
func (p envPaths) run() string { return filepath.Join(p.dir, "run") }

// control is the supervisor's socket: `env restart` asks it to restart a
// component.
func (p envPaths) control() string { return filepath.Join(p.dir, "control.sock") }

// binDir holds the kubectl that env up provides (a link to the build).
func (p envPaths) binDir() string  { return filepath.Join(p.dir, "bin") }
func (p envPaths) kubectl() string { return filepath.Join(p.binDir(), "kubectl") }

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
	if resolved, err := filepath.EvalSymlinks(stateDir); err == nil {
		stateDir = resolved
	}
	return envPaths{dir: stateDir}, nil
}

// Up starts an environment in the background: it checks the binaries,
// provides kubectl, chooses the VirtualMachine driver and starts the
// supervisor (o.Supervisor, running Serve), then returns once the
// environment is ready, printing how to use it. When one is ready in the
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
// directory (logs stay); with nothing running it says so.
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
	if err := os.MkdirAll(paths.dir, 0o755); err != nil {
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

	logFile, err := os.Create(paths.log())
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
// built into the store (binaries.Builder; cached once built).
func provideKubectl(ctx context.Context, root string, paths envPaths, assets string, version versions.Version) error {
	kubectl := filepath.Join(assets, binaries.Kubectl.Name)
	if v, err := binaries.BinaryVersion(ctx, kubectl, binaries.Kubectl); err != nil || v != version.String() {
		dir, err := (&binaries.Builder{Root: root}).Build(ctx, version, binaries.Kubectl)
		if err != nil {
			return fmt.Errorf("building kubectl %s for the environment: %w", version, err)
		}
		kubectl = filepath.Join(dir, binaries.Kubectl.Name)
	}
	kubectl, err := filepath.Abs(kubectl)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(paths.binDir(), 0o755); err != nil {
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
		fmt.Printf("The docker driver pulls no image: VirtualMachines without spec.image run %s (built from e2e/images/vm); any other spec.image must be one the daemon has (docker images).\n", testenv.VMImage)
	}
	fmt.Printf("Stop it with: make envtest-down (or kubeharness env down --state-dir %s)\n", paths.dir)
}

// vmDriverPingTimeout bounds how long up waits for a Docker daemon to answer.
const vmDriverPingTimeout = 3 * time.Second

// vmDriverChoice is the VirtualMachine controller's driver and why.
type vmDriverChoice struct {
	name string
	// why is "<name>: <reason>".
	why string
	// detail, when set, is what the Docker daemon answered, or failed to.
	detail error
}

// chooseVMDriver chooses the VirtualMachine controller's driver: asked is
// --vm-driver, which wins over $VM_DRIVER; without either, docker when a
// Docker daemon answers (DOCKER_HOST, DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH as the Docker CLI reads them), fake otherwise.
func chooseVMDriver(ctx context.Context, asked string) (vmDriverChoice, error) {
	source := "--vm-driver"
	if asked == "" {
		asked, source = os.Getenv(testenv.VMDriverEnv), testenv.VMDriverEnv
	}
	if asked != "" {
		if !driver.Known(asked) {
			return vmDriverChoice{}, fmt.Errorf("%s=%s: choose one of %s", source, asked, strings.Join(driver.Names(), ", "))
		}
		c := vmDriverChoice{name: asked, why: fmt.Sprintf("%s: %s=%s", asked, source, asked)}
		if asked == driver.DockerDriverName {
			if host, err := pingDocker(ctx); err != nil {
				c.why += fmt.Sprintf(", although no Docker daemon answers at %s yet", host)
				c.detail = err
			}
		}
		return c, nil
	}
	host, err := pingDocker(ctx)
	if err != nil {
		return vmDriverChoice{name: driver.FakeDriverName, detail: err,
			why: fmt.Sprintf("fake: no Docker daemon answers at %s; set %s=docker to insist", host, testenv.VMDriverEnv)}, nil
	}
	return vmDriverChoice{name: driver.DockerDriverName, why: fmt.Sprintf("docker: the daemon at %s answers", host)}, nil
}

// print writes the choice as env up reports it.
func (c vmDriverChoice) print(w io.Writer) {
	fmt.Fprintf(w, "VirtualMachine driver %s\n", c.why)
	if c.detail != nil {
		fmt.Fprintf(w, "  (%v)\n", c.detail)
	}
}

// pingDocker asks the Docker daemon the docker driver would use whether it
// answers, and returns its address.
func pingDocker(ctx context.Context) (host string, err error) {
	d, err := driver.NewDocker(driver.DockerOptions{})
	if err != nil {
		return cmp.Or(os.Getenv(driver.EnvDockerHost), client.DefaultDockerHost), err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(ctx, vmDriverPingTimeout)
	defer cancel()
	return d.Host(), d.Ping(ctx)
}

// Serve is the supervisor Up starts in the background, in a process of
// its own that holds the state directory's lock as its file descriptor 3
// (Up hands it over): it brings up the environment the way the suite does
// (testenv.StartLocal) on the control plane of version, with the manager
// and the VirtualMachine controller as processes, records what runs in the
// state file, restarts a component that exits (with backoff) or that
// Restart names, and stops it all on SIGTERM, SIGINT or SIGHUP. Its notes
// go to standard output, which Up points at env.log.
func Serve(o Options, version versions.Version) error {
	paths, err := o.paths()
	if err != nil {
		return err
	}
	root := o.Root
	lock, err := inheritLock(paths)
	if err != nil {
		return err
	}
	defer lock.Close()
	// Every process started from here carries the mark (envMark).
	if err := os.Setenv(envMarkerEnv, paths.dir); err != nil {
		return err
	}
	st := &envState{SupervisorPID: os.Getpid(), Version: version.String(), Phase: "starting", Kubectl: paths.kubectl()}
	save := func() {
		if err := writeState(paths, st); err != nil {
			fmt.Fprintf(os.Stderr, "writing state: %v\n", err)
		}
	}
	fail := func(err error) error {
		st.Error, st.Phase = err.Error(), "failed"
		save()
		return err
	}
	save()
	defer func() { _ = os.Remove(paths.state()) }()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer cancel()

	if st.VMDriver = o.VMDriver; st.VMDriver == "" {
		c, err := chooseVMDriver(ctx, "")
		if err != nil {
			return fail(err)
		}
		st.VMDriver = c.name
		c.print(os.Stdout)
	}
	vmOpts := vmcontroller.DefaultOptions()
	vmOpts.Driver, vmOpts.ProbeAddr = st.VMDriver, "0"
	if st.VMDriver == driver.DockerDriverName {
		// Nothing can be pulled: VirtualMachines without spec.image run the
		// image the suite builds from e2e/images/vm.
		st.Phase = "building the VirtualMachine image " + testenv.VMImage
		save()
		if err := testenv.EnsureVMImage(ctx, root, os.Stdout); err != nil {
			fmt.Printf("VirtualMachines without spec.image will fail: building %s: %v\n", testenv.VMImage, err)
		} else {
			vmOpts.Controller.DefaultImage = testenv.VMImage
		}
	}
	if err := vmOpts.Validate(); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(paths.run(), 0o700); err != nil {
		return fail(err)
	}

	mlog, err := os.Create(paths.managerLog())
	if err != nil {
		return fail(err)
	}
	defer mlog.Close()
	vlog, err := os.Create(paths.vmControllerLog())
	if err != nil {
		return fail(err)
	}
	defer vlog.Close()
	// started records a process in the state file once it runs.
	started := func(name, binary string) func(pid int) {
		return func(pid int) {
			exe, _ := filepath.EvalSymlinks(binary)
			st.setProcess(name, pid, exe)
			save()
		}
	}
	managerRunner := testenv.ManagerProcess{
		Binary: o.Manager, Kubeconfig: paths.managerKubeconfig(), Log: mlog,
		Started: started("manager", o.Manager),
	}
	vmRunner := testenv.VMControllerProcess{
		Binary: o.VMController, Kubeconfig: paths.vmControllerKubeconfig(), Log: vlog,
		Started: started("vm-controller", o.VMController),
	}
	var kubeconfigErr error
	env, err := testenv.StartLocal(ctx, testenv.LocalOptions{
		Root: root, Version: version, Controllers: controlplane.DefaultControllers, Out: os.Stdout,
		DisposableBy: "kubeharness env up", Dir: paths.run(),
		Runner: managerRunner, VMController: &vmOpts, VMRunner: vmRunner,
		Progress: func(step string, env *testenv.LocalEnv) {
			// Record the control plane as soon as it runs, so that `env
			// down` can stop it even if this supervisor dies.
			if cp := env.ControlPlane; cp != nil && st.Host == "" {
				st.Host, st.EtcdDataDir, st.ControlPlaneDir = cp.Config.Host, cp.EtcdDataDir, cp.Dir()
				for name, pid := range cp.PIDs() {
					exe, _ := filepath.EvalSymlinks(filepath.Join(cp.BinaryDir, name))
					st.setProcess(name, pid, exe)
				}
				kubeconfigErr = writeKubeconfig(cp, paths.kubeconfig())
			}
			st.Phase = step
			save()
		},
	})
	if err != nil {
		return fail(fmt.Errorf("%w (manager log: %s, VirtualMachine controller log: %s)", err, paths.managerLog(), paths.vmControllerLog()))
	}
	defer func() {
		fmt.Println("stopping the VirtualMachine controller, the manager, kube-controller-manager, kube-apiserver and etcd")
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping: %v\n", err)
		}
	}()
	if kubeconfigErr != nil {
		return fail(kubeconfigErr)
	}
	requests, stopControl, err := serveControl(paths)
	if err != nil {
		return fail(err)
	}
	defer stopControl()
	st.Ready, st.Phase = true, "ready"
	save()
	fmt.Printf("ready: API server %s\n", env.ControlPlane.Config.Host)

	manager := &supervised{name: "manager", what: "the manager", log: paths.managerLog(), run: env.Manager,
		start: func() (testenv.RunningManager, error) {
			m, err := managerRunner.RunManager(env.ControlPlane, env.ManagerOptions)
			if err == nil {
				env.Manager = m
			}
			return m, err
		},
		// A restarted manager is back once its webhooks admit requests.
		ready: func(ctx context.Context, done <-chan error) error {
			return testenv.WaitForWebhooks(ctx, env.Client, done)
		},
	}
	vm := &supervised{name: "vm-controller", what: "the VirtualMachine controller", log: paths.vmControllerLog(), run: env.VMController,
		start: func() (testenv.RunningManager, error) {
			r, err := vmRunner.RunVMController(env.ControlPlane, vmOpts)
			if err == nil {
				env.VMController = r
			}
			return r, err
		},
	}
	components := []*supervised{manager, vm}
	for _, c := range components {
		c.watch(c.run)
	}
	changed := func(c *supervised) {
		st.setRestarts(c.name, c.restarts)
		var down []string
		for _, c := range components {
			if c.retry != nil {
				down = append(down, c.what+" is down, restarting in "+time.Until(c.retryAt).Round(time.Second).String())
			}
		}
		st.Phase = cmp.Or(strings.Join(down, "; "), "ready")
		save()
	}
	for {
		select {
		case <-ctx.Done():
			logf("signalled; shutting down")
			return nil
		case err := <-manager.done:
			manager.exited(err)
			changed(manager)
		case err := <-vm.done:
			vm.exited(err)
			changed(vm)
		case <-manager.retry:
			if err := manager.restart(ctx, false); err != nil {
				// A failed start is scheduled again with backoff.
				logf("%v", err)
			}
			changed(manager)
		case <-vm.retry:
			if err := vm.restart(ctx, false); err != nil {
				// A failed start is scheduled again with backoff.
				logf("%v", err)
			}
			changed(vm)
		case req := <-requests:
			var c *supervised
			for _, cand := range components {
				if cand.name == req.name {
					c = cand
				}
			}
			if c == nil {
				req.reply <- fmt.Errorf("no component %q: restart manager or vm-controller", req.name)
				continue
			}
			req.reply <- c.restart(ctx, true)
			changed(c)
		}
	}
}

// Restart backoff of a supervised component: the first restart after
// restartBackoffMin, each one after another exit twice as late, at most
// restartBackoffMax; once a component has run for restartHealthyAfter its
// next exit starts over.
const (
	restartBackoffMin   = time.Second
	restartBackoffMax   = time.Minute
	restartHealthyAfter = time.Minute
)

// nextBackoff is how long to wait before restarting a component that exited
// after running for ranFor, when the wait before its last restart was prev
// (zero: none yet).
func nextBackoff(prev, ranFor time.Duration) time.Duration {
	if prev == 0 || ranFor >= restartHealthyAfter {
		return restartBackoffMin
	}
	return min(2*prev, restartBackoffMax)
}

// supervised is a controller the supervisor keeps running.
type supervised struct {
	// name is its name in the state file and for `env restart`; what
	// names it in the log.
	name, what, log string
	start           func() (testenv.RunningManager, error)
	// ready, when set, waits until a restarted process serves.
	ready func(ctx context.Context, done <-chan error) error
	run   testenv.RunningManager
	// done yields run's exit (watch); nil while it is down.
	done <-chan error
	// gone is closed once run has exited.
	gone <-chan struct{}
	// started is when run started.
	started time.Time
	// backoff is the wait before the last restart after an exit.
	backoff time.Duration
	// retry fires when a down component is due to restart (at retryAt);
	// nil while it runs.
	retry   <-chan time.Time
	retryAt time.Time
	// restarts counts restarts after exits.
	restarts int
}

// exited schedules the restart of c, which exited with err.
func (c *supervised) exited(err error) {
	ranFor := time.Since(c.started)
	c.done = nil
	c.backoff = nextBackoff(c.backoff, ranFor)
	c.retryAt = time.Now().Add(c.backoff)
	c.retry = time.After(c.backoff)
	logf("%s exited after %s (%v); restarting it in %s (see %s)", c.what, ranFor.Round(time.Millisecond), err, c.backoff, c.log)
}

// restart starts c again, stopping it first when it runs; asked says
// `env restart` asked for it (not counted as a restart after an exit, and
// the backoff starts over). It returns once the new process runs (and, with
// ready, serves).
func (c *supervised) restart(ctx context.Context, asked bool) error {
	if c.done != nil {
		logf("restarting %s as asked", c.what)
		if err := c.run.Stop(testenv.ManagerStopTimeout); err != nil {
			logf("stopping %s: %v", c.what, err)
		}
	}
	c.done, c.retry = nil, nil
	if asked {
		c.backoff = 0
	} else {
		c.restarts++
	}
	run, err := c.start()
	if err != nil {
		c.exited(err)
		return fmt.Errorf("starting %s: %w", c.what, err)
	}
	c.watch(run)
	logf("%s runs again (restart %d after exits)", c.what, c.restarts)
	if c.ready == nil {
		return nil
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := c.gone
	go func() {
		select {
		case <-gone:
			cancel()
		case <-rctx.Done():
		}
	}()
	if err := c.ready(rctx, nil); err != nil {
		select {
		case <-gone:
			return fmt.Errorf("%s exited before it served; see %s", c.what, c.log)
		default:
		}
		return fmt.Errorf("%s runs but does not serve: %w; see %s", c.what, err, c.log)
	}
	logf("%s serves", c.what)
	return nil
}

// watch makes run c's process: done yields its exit, and gone is closed
// by then.
func (c *supervised) watch(run testenv.RunningManager) {
	done, gone := make(chan error, 1), make(chan struct{})
	go func() {
		err := <-run.Done()
		close(gone)
		done <- err
	}()
	c.run, c.done, c.gone, c.started = run, done, gone, time.Now()
}

// logf writes a timestamped line to the supervisor's log (env.log).
func logf(format string, args ...any) {
	fmt.Printf("%s %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

// writeKubeconfig writes an admin kubeconfig for cp to path.
func writeKubeconfig(cp *controlplane.ControlPlane, path string) error {
	data, err := cp.KubeConfig(rest.ImpersonationConfig{})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// envDownWait bounds how long down waits for the supervisor to stop
// everything after SIGTERM, and envLockRelease how long it waits for an
// exiting supervisor to release the lock.
const (
	envDownWait    = 45 * time.Second
	envLockRelease = 10 * time.Second
)

func envDown(paths envPaths) error {
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

// envMarkerEnv is set, to the state directory, in the environment of the
// supervisor and so of every process it starts (envMark). env down and
// status take a pid from the state file for one of theirs only when the
// process carries it (process.Owned): a state file naming another
// process's pid names nothing they signal.
const envMarkerEnv = "KUBEHARNESS_ENVTEST_STATE_DIR"

// envMark is the environment mark of the processes of state directory dir.
func envMark(dir string) string { return envMarkerEnv + "=" + dir }

// lockState takes the state directory's lock (paths.lock) without waiting
// and writes this process's pid into it. When another process holds it,
// lock is nil and holder is the pid the holder wrote.
func lockState(paths envPaths) (lock *os.File, holder int, err error) {
	f, err := os.OpenFile(paths.lock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("opening the state directory's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder, _ := lockHolder(paths)
			return nil, holder, nil
		}
		return nil, 0, fmt.Errorf("locking %s: %w", paths.lock(), err)
	}
	if err := writeLockHolder(f, os.Getpid()); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, 0, nil
}

// writeLockHolder records pid as the lock's holder.
func writeLockHolder(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0)
	return err
}

// lockHolder reports whether a process holds the state directory's lock,
// and the pid it wrote.
func lockHolder(paths envPaths) (pid int, held bool) {
	f, err := os.Open(paths.lock())
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
		return 0, false
	}
	data, _ := io.ReadAll(f)
	pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, true
}

// envLockFD is the supervisor's file descriptor of the lock env up took
// (exec.Cmd.ExtraFiles[0]).
const envLockFD = 3

// inheritLock takes over the lock env up passed the supervisor: it checks
// that the descriptor is the state directory's lock and held, keeps it from
// the processes the supervisor starts, and records the supervisor as its
// holder.
func inheritLock(paths envPaths) (*os.File, error) {
	var got, want syscall.Stat_t
	if syscall.Fstat(envLockFD, &got) != nil || syscall.Stat(paths.lock(), &want) != nil ||
		got.Dev != want.Dev || got.Ino != want.Ino || syscall.Flock(envLockFD, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil, fmt.Errorf("env serve holds no lock on %s: it is the supervisor `kubeharness env up` starts, not a command of its own", paths.lock())
	}
	syscall.CloseOnExec(envLockFD)
	f := os.NewFile(envLockFD, paths.lock())
	if err := writeLockHolder(f, os.Getpid()); err != nil {
		return nil, err
	}
	return f, nil
}

// restartRequest is `env restart`'s request to the supervisor's loop.
type restartRequest struct {
	name  string
	reply chan error
}

// serveControl listens on paths.control() for `env restart`: each
// connection sends "restart NAME" and receives "ok" or "error: ...".
func serveControl(paths envPaths) (<-chan restartRequest, func(), error) {
	_ = os.Remove(paths.control())
	l, err := net.Listen("unix", paths.control())
	if err != nil {
		return nil, nil, fmt.Errorf("listening for env restart on %s: %w (a --state-dir with a shorter path helps)", paths.control(), err)
	}
	if err := os.Chmod(paths.control(), 0o600); err != nil {
		l.Close()
		return nil, nil, err
	}
	requests := make(chan restartRequest)
	stop := make(chan struct{})
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				line, err := bufio.NewReader(conn).ReadString('\n')
				name, ok := strings.CutPrefix(strings.TrimSpace(line), "restart ")
				if err != nil || !ok {
					fmt.Fprintf(conn, "error: unknown request %q\n", line)
					return
				}
				req := restartRequest{name: name, reply: make(chan error, 1)}
				select {
				case requests <- req:
				case <-stop:
					fmt.Fprintln(conn, "error: the environment is stopping")
					return
				}
				if err := <-req.reply; err != nil {
					fmt.Fprintf(conn, "error: %v\n", err)
					return
				}
				fmt.Fprintln(conn, "ok")
			}()
		}
	}()
	return requests, func() { close(stop); l.Close(); _ = os.Remove(paths.control()) }, nil
}

// envRestartTimeout bounds how long restart waits for the supervisor to
// restart a component (the manager: until its webhooks admit requests).
const envRestartTimeout = testenv.WebhookReadyTimeout + testenv.ManagerStopTimeout + 30*time.Second

// envRestart asks the supervisor to restart the components names, one by
// one, and returns once each runs again.
func envRestart(paths envPaths, names []string) error {
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
			reply, err = bufio.NewReader(conn).ReadString('\n')
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

func readState(paths envPaths) (*envState, error) {
	data, err := os.ReadFile(paths.state())
	if err != nil {
		return nil, err
	}
	st := &envState{}
	return st, json.Unmarshal(data, st)
}

func writeState(paths envPaths, st *envState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := paths.state() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, paths.state())
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
