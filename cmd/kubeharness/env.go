package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
	"github.com/kubeharness/kubeharness/e2e/framework/controlplane"
	managerapp "github.com/kubeharness/kubeharness/internal/manager"
)

// envState is .kubeharness/envtest/state.json: what `env up` started, so that
// `env down` can stop all of it even after the supervisor died.
type envState struct {
	SupervisorPID int       `json:"supervisorPID"`
	Phase         string    `json:"phase"`
	Ready         bool      `json:"ready"`
	Error         string    `json:"error,omitempty"`
	Version       string    `json:"version,omitempty"`
	Host          string    `json:"host,omitempty"`
	EtcdDataDir   string    `json:"etcdDataDir,omitempty"`
	Processes     []envProc `json:"processes,omitempty"`
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

func runEnv(ctx context.Context, args []string) error {
	usage := `kubeharness env up|down|status [flags]

  up      start etcd, kube-apiserver (built by 'kubeharness bins') and the manager
          in the background; returns once the webhooks admit requests
  down    stop everything 'up' started, also after the manager or the
          supervisor crashed; safe to run when nothing runs
  status  show what runs

State, kubeconfig and logs live in .kubeharness/envtest/.`
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "Usage: "+usage+"\n\nRun `kubeharness env up -h` for the flags.")
		if len(args) == 0 {
			return errors.New("env needs a subcommand: up, down or status")
		}
		return nil
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	sub := args[0]
	fs := newFlagSet("env "+sub, "env "+sub+" [flags]")
	var o envOptions
	fs.StringVar(&o.version, "version", "", "Kubernetes version: a patch, or a minor for its newest patch (default: $"+binaries.VersionEnv+", then versions.yaml)")
	fs.StringVar(&o.manager, "manager", "bin/manager", "manager binary to run (make envtest-up builds it)")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long up waits for the control plane and the webhooks")
	stateDir := fs.String("state-dir", filepath.Join(root, ".kubeharness", "envtest"), "where the kubeconfig, logs and state live")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if sub == "up" {
		if o.request, err = versionRequest(fs, o.version, ""); err != nil {
			return err
		}
	}
	if *stateDir, err = filepath.Abs(*stateDir); err != nil {
		return err
	}
	paths := envPaths{dir: *stateDir}
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
	return fmt.Errorf("unknown env subcommand %q; usage: %s", sub, usage)
}

type envOptions struct {
	// version is --version: for serve, the patch up resolved.
	version, manager string
	// request is what up is asked for.
	request binaries.Request
	timeout time.Duration
}

func envUp(ctx context.Context, root string, paths envPaths, o envOptions) error {
	manager, timeout := o.manager, o.timeout
	var err error
	if st, err := readState(paths); err == nil {
		if procAlive(st.SupervisorPID, "") {
			fmt.Fprintf(os.Stderr, "an envtest environment is already running (pid %d)\n", st.SupervisorPID)
			printUsage(paths)
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

	logf, err := os.Create(paths.log())
	if err != nil {
		return err
	}
	defer logf.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "env", "serve", "--version", version, "--manager", manager, "--state-dir", paths.dir)
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
				fmt.Fprintf(os.Stderr, "envtest %s with the kubeharness manager is up after %s\n\n", version, time.Since(start).Round(100*time.Millisecond))
				printUsage(paths)
				return nil
			}
		}
	}
}

func printUsage(paths envPaths) {
	fmt.Printf(`Use it with:
  export KUBECONFIG=%s
  kubectl get pb -A
Manager log: %s
Stop it with: make envtest-down (or kubeharness env down --state-dir %s)
`, paths.kubeconfig(), paths.managerLog(), paths.dir)
}

// envServe is the background supervisor `env up` starts: it runs the
// control plane and the manager and stops both on SIGTERM.
func envServe(root string, paths envPaths, o envOptions) error {
	version, manager := o.version, o.manager
	st := &envState{SupervisorPID: os.Getpid(), Version: version, Phase: "starting etcd and kube-apiserver"}
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
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	cp, err := framework.StartControlPlane(controlplane.Options{
		Root: root, Version: version, Controllers: controlplane.DefaultControllers, Out: os.Stdout,
	})
	if err != nil {
		return fail(err)
	}
	defer func() {
		fmt.Println("stopping etcd and kube-apiserver")
		if err := cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		}
		_ = os.Remove(paths.state())
	}()
	st.Host, st.EtcdDataDir = cp.Config.Host, cp.EtcdDataDir
	for name, pid := range cp.PIDs() {
		exe, _ := filepath.EvalSymlinks(filepath.Join(cp.BinaryDir, name))
		st.Processes = append(st.Processes, envProc{Name: name, PID: pid, Exe: exe})
	}
	st.Phase = "writing kubeconfig"
	save()

	kubeconfig, err := cp.KubeConfig(rest.ImpersonationConfig{})
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(paths.kubeconfig(), kubeconfig, 0o600); err != nil {
		return fail(err)
	}
	// The manager runs as its ServiceAccount, with config/rbac's permissions.
	managerKubeconfig, err := cp.KubeConfig(framework.ImpersonateManager(cp.Config).Impersonate)
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(paths.managerKubeconfig(), managerKubeconfig, 0o600); err != nil {
		return fail(err)
	}
	st.Phase = "installing config/rbac and config/webhook"
	save()
	c, port, err := framework.InstallLocal(context.Background(), cp, root, managerapp.Scheme())
	if err != nil {
		return fail(err)
	}
	if err := framework.MarkDisposable(context.Background(), c, "kubeharness env up"); err != nil {
		return fail(err)
	}
	st.Phase = "starting the manager"
	save()
	mlog, err := os.Create(paths.managerLog())
	if err != nil {
		return fail(err)
	}
	defer mlog.Close()
	mgr := exec.Command(manager,
		"--kubeconfig="+paths.managerKubeconfig(),
		"--webhook-host=127.0.0.1",
		"--webhook-port="+strconv.Itoa(port),
		"--webhook-extra-ip=127.0.0.1",
		"--webhook-extra-dns-name=localhost",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	)
	mgr.Stdout, mgr.Stderr = mlog, mlog
	// The manager goes when the supervisor goes, however it goes.
	mgr.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := mgr.Start(); err != nil {
		return fail(fmt.Errorf("starting manager %s: %w", manager, err))
	}
	mgrExe, _ := filepath.EvalSymlinks(manager)
	st.Processes = append(st.Processes, envProc{Name: "manager", PID: mgr.Process.Pid, Exe: mgrExe})
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Wait() }()
	stopManager := func() {
		if mgr.ProcessState != nil {
			return
		}
		_ = mgr.Process.Signal(syscall.SIGTERM)
		select {
		case <-managerDone:
		case <-time.After(15 * time.Second):
			_ = mgr.Process.Kill()
			<-managerDone
		}
	}
	defer stopManager()

	st.Phase = "waiting for the certificate through the CSR API and the webhooks to admit a dry-run Playbook"
	save()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-sigs; cancel() }()
	if err := framework.WaitForWebhooks(ctx, c, managerDone); err != nil {
		return fail(fmt.Errorf("%w (manager log: %s)", err, paths.managerLog()))
	}
	st.Phase, st.Ready = "ready", true
	save()
	fmt.Printf("ready: API server %s, manager pid %d\n", cp.Config.Host, mgr.Process.Pid)

	select {
	case <-ctx.Done():
		fmt.Println("signalled; shutting down")
	case err := <-managerDone:
		// Keep the control plane for inspection; `env down` stops it.
		st.Phase = fmt.Sprintf("manager exited (%v); control plane still up, see %s", err, paths.managerLog())
		save()
		fmt.Println(st.Phase)
		<-ctx.Done()
	}
	return nil
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
	fmt.Printf("supervisor pid %d: %s\nphase: %s\nAPI server: %s\nkubeconfig: %s\n",
		st.SupervisorPID, aliveWord(procAlive(st.SupervisorPID, "")), st.Phase, st.Host, paths.kubeconfig())
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
