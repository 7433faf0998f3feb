package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// envState is .kubeharness/envtest/state.json: what `env up` started, so that
// `env down` can stop all of it even after the supervisor died.
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
	Processes       []envProc `json:"processes,omitempty"`
}

type envProc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Exe  string `json:"exe"`
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

// runEnv runs the env subcommand sub (up, serve, down or status; see
// newEnvCommand) with its flags.
func runEnv(ctx context.Context, sub string, o envOptions) error {
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	if sub == "up" {
		if o.request, err = versionRequest(o.version, ""); err != nil {
			return err
		}
	}
	stateDir := o.stateDir
	if stateDir == "" {
		stateDir = filepath.Join(root, ".kubeharness", "envtest")
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return err
	}
	paths := envPaths{dir: stateDir}
	switch sub {
	case "up":
		return envUp(ctx, root, paths, o)
	case "serve":
		return envServe(root, paths, o)
	case "down":
		return envDown(paths)
	case "status":
		return envStatus(paths)
	}
	return fmt.Errorf("unknown env subcommand %q", sub)
}

type envOptions struct {
	// version is --version: for serve, the patch up resolved.
	version, manager string
	// vmController is the VirtualMachine controller's binary.
	vmController string
	// vmDriver is --vm-driver: for up, the driver asked for (empty:
	// $VM_DRIVER, then docker when a daemon answers, else fake); for
	// serve, the driver up chose.
	vmDriver string
	// request is what up is asked for.
	request binaries.Request
	timeout time.Duration
	// stateDir is --state-dir; empty is .kubeharness/envtest in the
	// repository.
	stateDir string
}

func envUp(ctx context.Context, root string, paths envPaths, o envOptions) error {
	manager, vmController, timeout := o.manager, o.vmController, o.timeout
	var err error
	if st, err := readState(paths); err == nil {
		if procAlive(st.SupervisorPID, "") {
			fmt.Fprintf(os.Stderr, "an envtest environment is already running (pid %d)\n", st.SupervisorPID)
			printUsage(paths, st.VMDriver)
			return nil
		}
		fmt.Fprintln(os.Stderr, "cleaning up after an environment whose supervisor is gone")
		if err := envDown(paths); err != nil {
			return err
		}
	}
	if manager, err = filepath.Abs(manager); err != nil {
		return err
	}
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("manager binary %s not found: run `make manager` or pass --manager", manager)
	}
	if err := os.MkdirAll(paths.dir, 0o755); err != nil {
		return err
	}
	// Resolve the version and check the binaries now, not in the
	// background; the supervisor gets the patch they report.
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	_, version, err := res.Locate(ctx, root, o.request, binaries.Etcd, binaries.KubeAPIServer, binaries.KubeControllerManager)
	if err != nil {
		return err
	}
	if vmController, err = filepath.Abs(vmController); err != nil {
		return err
	}
	if _, err := os.Stat(vmController); err != nil {
		return fmt.Errorf("VirtualMachine controller binary %s not found: run `make vm-controller` or pass --vm-controller", vmController)
	}
	vmDriver, err := chooseVMDriver(ctx, o.vmDriver)
	if err != nil {
		return err
	}

	logf, err := os.Create(paths.log())
	if err != nil {
		return err
	}
	defer logf.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "env", "serve", "--version", version, "--manager", manager,
		"--vm-controller", vmController, "--vm-driver", vmDriver.name, "--state-dir", paths.dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = root
	// Its own session: the environment outlives this command and the
	// terminal it ran in.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the envtest supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	start := time.Now()
	fmt.Fprintf(os.Stderr, "starting envtest %s (supervisor pid %d, log %s)\n", version, cmd.Process.Pid, paths.log())
	vmDriver.print(os.Stderr)
	phase := ""
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the envtest supervisor exited (%v) before it was ready; last lines of %s:\n%s", err, paths.log(), tail(paths.log(), 20))
		case <-deadline:
			_ = envDown(paths)
			return fmt.Errorf("not ready after %s (last phase: %s); last lines of %s:\n%s", timeout, phase, paths.log(), tail(paths.log(), 20))
		case <-ctx.Done():
			_ = envDown(paths)
			return ctx.Err()
		case <-tick.C:
			st, err := readState(paths)
			if err != nil || st.SupervisorPID != cmd.Process.Pid {
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

func printUsage(paths envPaths, vmDriver string) {
	fmt.Printf(`Use it with:
  export KUBECONFIG=%s
  kubectl get pb -A
  kubectl get vms -A
Manager log: %s
VirtualMachine controller log (driver %s): %s
`, paths.kubeconfig(), paths.managerLog(), vmDriver, paths.vmControllerLog())
	if vmDriver == driver.DockerDriverName {
		fmt.Printf("The docker driver pulls no image: VirtualMachines without spec.image run %s (built from e2e/images/vm); any other spec.image must be one the daemon has (docker images).\n", framework.VMImage)
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
		asked, source = os.Getenv(framework.VMDriverEnv), framework.VMDriverEnv
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
			why: fmt.Sprintf("fake: no Docker daemon answers at %s; set %s=docker to insist", host, framework.VMDriverEnv)}, nil
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

// envServe is the background supervisor `env up` starts: it brings up the
// environment the way the suite does (framework.StartLocal), with the
// manager and the VirtualMachine controller as processes, records what runs
// in the state file, and stops it all on SIGTERM.
func envServe(root string, paths envPaths, o envOptions) error {
	st := &envState{SupervisorPID: os.Getpid(), Version: o.version, Phase: "starting"}
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

	if st.VMDriver = o.vmDriver; st.VMDriver == "" {
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
		st.Phase = "building the VirtualMachine image " + framework.VMImage
		save()
		if err := framework.EnsureVMImage(ctx, root, os.Stdout); err != nil {
			fmt.Printf("VirtualMachines without spec.image will fail: building %s: %v\n", framework.VMImage, err)
		} else {
			vmOpts.Controller.DefaultImage = framework.VMImage
		}
	}
	if err := vmOpts.Validate(); err != nil {
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
			st.Processes = append(st.Processes, envProc{Name: name, PID: pid, Exe: exe})
			save()
		}
	}
	var kubeconfigErr error
	env, err := framework.StartLocal(ctx, framework.LocalOptions{
		Root: root, Version: o.version, Controllers: controlplane.DefaultControllers, Out: os.Stdout,
		DisposableBy: "kubeharness env up",
		Runner: framework.ManagerProcess{
			Binary: o.manager, Kubeconfig: paths.managerKubeconfig(), Log: mlog,
			Started: started("manager", o.manager),
		},
		VMController: &vmOpts,
		VMRunner: framework.VMControllerProcess{
			Binary: o.vmController, Kubeconfig: paths.vmControllerKubeconfig(), Log: vlog,
			Started: started("vm-controller", o.vmController),
		},
		Progress: func(step string, env *framework.LocalEnv) {
			// Record the control plane as soon as it runs, so that `env
			// down` can stop it even if this supervisor dies.
			if cp := env.ControlPlane; cp != nil && st.Host == "" {
				st.Host, st.EtcdDataDir, st.ControlPlaneDir = cp.Config.Host, cp.EtcdDataDir, cp.Dir()
				for name, pid := range cp.PIDs() {
					exe, _ := filepath.EvalSymlinks(filepath.Join(cp.BinaryDir, name))
					st.Processes = append(st.Processes, envProc{Name: name, PID: pid, Exe: exe})
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
	st.Ready = true
	save()
	fmt.Printf("ready: API server %s\n", env.ControlPlane.Config.Host)

	// A controller that exits leaves the rest up for inspection; `env
	// down` stops it.
	managerDone, vmDone := env.Manager.Done(), env.VMController.Done()
	var exited []string
	exit := func(what string, err error, log string) {
		exited = append(exited, fmt.Sprintf("%s exited (%v), see %s", what, err, log))
		st.Phase = strings.Join(exited, "; ") + "; the rest is still up"
		save()
		fmt.Println(st.Phase)
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Println("signalled; shutting down")
			return nil
		case err := <-managerDone:
			managerDone = nil
			exit("manager", err, paths.managerLog())
		case err := <-vmDone:
			vmDone = nil
			exit("VirtualMachine controller", err, paths.vmControllerLog())
		}
	}
}

// writeKubeconfig writes an admin kubeconfig for cp to path.
func writeKubeconfig(cp *controlplane.ControlPlane, path string) error {
	data, err := cp.KubeConfig(rest.ImpersonationConfig{})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func envDown(paths envPaths) error {
	st, err := readState(paths)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "no envtest environment is running")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w; remove it if nothing runs", paths.state(), err)
	}
	if procAlive(st.SupervisorPID, "") {
		fmt.Fprintf(os.Stderr, "stopping the envtest supervisor (pid %d)\n", st.SupervisorPID)
		_ = syscall.Kill(st.SupervisorPID, syscall.SIGTERM)
		waitGone(st.SupervisorPID, 45*time.Second)
	}
	// Whatever the supervisor did not stop (it crashed, or was killed) goes now.
	for _, p := range st.Processes {
		if !procAlive(p.PID, p.Exe) {
			continue
		}
		fmt.Fprintf(os.Stderr, "stopping leftover %s (pid %d)\n", p.Name, p.PID)
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
		if !waitGone(p.PID, 10*time.Second) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			waitGone(p.PID, 5*time.Second)
		}
	}
	if procAlive(st.SupervisorPID, "") {
		_ = syscall.Kill(st.SupervisorPID, syscall.SIGKILL)
	}
	if st.EtcdDataDir != "" {
		_ = os.RemoveAll(st.EtcdDataDir)
	}
	if st.ControlPlaneDir != "" {
		_ = os.RemoveAll(st.ControlPlaneDir)
	}
	_ = os.Remove(paths.state())
	_ = os.Remove(paths.kubeconfig())
	fmt.Fprintf(os.Stderr, "envtest environment stopped; logs kept in %s\n", paths.dir)
	return nil
}

func envStatus(paths envPaths) error {
	st, err := readState(paths)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("no envtest environment is running")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Printf("supervisor pid %d: %s\nphase: %s\nAPI server: %s\nkubeconfig: %s\nVirtualMachine driver: %s\n",
		st.SupervisorPID, aliveWord(procAlive(st.SupervisorPID, "")), st.Phase, st.Host, paths.kubeconfig(), st.VMDriver)
	for _, p := range st.Processes {
		fmt.Printf("%-15s pid %-7d %s\n", p.Name, p.PID, aliveWord(procAlive(p.PID, p.Exe)))
	}
	return nil
}

func aliveWord(ok bool) string {
	if ok {
		return "running"
	}
	return "not running"
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

// procAlive reports whether pid runs and, when exe is given, still runs
// that executable (so a reused pid is never signalled).
func procAlive(pid int, exe string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// A zombie has exited; it only waits for its parent to reap it.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return false
		}
	}
	if exe == "" {
		return true
	}
	got, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(got, " (deleted)") == exe
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !procAlive(pid, "") {
			return true
		}
		time.Sleep(50 * time.Millisecond) // polling a process table, not waiting for cluster state
	}
	return !procAlive(pid, "")
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
