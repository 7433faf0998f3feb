package devenv

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// Serve is the supervisor Up starts in the background, in a process of
// its own that holds the state directory's lock as its file descriptor 3
// (Up hands it over): it brings up the environment the way the suite does
// (operatortest.StartLocal) on the control plane of version, with the manager
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
	// env up made the state directory; it must still be one.
	if found, err := requireStateDir(paths); err != nil {
		return err
	} else if !found {
		return fmt.Errorf("%s is no state directory env up made (it has no %s)", paths.dir, stateMarkerName)
	}
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
		st.Phase = "building the VirtualMachine image " + vmfixture.VMImage
		save()
		if err := vmfixture.EnsureVMImage(ctx, root, os.Stdout); err != nil {
			fmt.Printf("VirtualMachines without spec.image will fail: building %s: %v\n", vmfixture.VMImage, err)
		} else {
			vmOpts.Controller.DefaultImage = vmfixture.VMImage
		}
	}
	if err := vmOpts.Validate(); err != nil {
		return fail(err)
	}
	if err := ensureDir(paths.run(), 0o700); err != nil {
		return fail(err)
	}
	// The processes' kubeconfigs are written afresh (operatortest writes
	// them with os.WriteFile, which would keep a file already there).
	for _, f := range []string{paths.managerKubeconfig(), paths.vmControllerKubeconfig()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}

	mlog, err := createFile(paths.managerLog())
	if err != nil {
		return fail(err)
	}
	defer mlog.Close()
	vlog, err := createFile(paths.vmControllerLog())
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
	managerRunner := operatortest.ManagerProcess{
		Binary: o.Manager, Kubeconfig: paths.managerKubeconfig(), Log: mlog,
		Started: started("manager", o.Manager),
	}
	vmRunner := operatortest.VMControllerProcess{
		Binary: o.VMController, Kubeconfig: paths.vmControllerKubeconfig(), Log: vlog,
		Started: started("vm-controller", o.VMController),
	}
	var kubeconfigErr error
	env, err := operatortest.StartLocal(ctx, operatortest.LocalOptions{
		Root: root, Version: version, Controllers: controlplane.DefaultControllers, Out: os.Stdout,
		MadeBy: "kubeharness env up", Dir: paths.run(),
		Runner: managerRunner, VMController: &vmOpts, VMRunner: vmRunner,
		Progress: func(step string, env *operatortest.LocalEnv) {
			// Record the control plane as soon as it runs, so that `env
			// down` can stop it even if this supervisor dies.
			if cp := env.ControlPlane; cp != nil && st.Host == "" {
				st.Host, st.EtcdDataDir, st.ControlPlaneDir = cp.Config.Host, cp.EtcdDataDir, cp.Dir()
				exes := cp.Executables()
				for name, pid := range cp.PIDs() {
					exe, _ := filepath.EvalSymlinks(exes[name])
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
		start: func() (operatortest.Running, error) {
			m, err := managerRunner.Run(env.ControlPlane, env.ManagerOptions)
			if err == nil {
				env.Manager = m
			}
			return m, err
		},
		// A restarted manager is back once its webhooks admit requests.
		ready: func(ctx context.Context, done <-chan error) error {
			return deploy.WaitForWebhooks(ctx, env.Client, done)
		},
	}
	vm := &supervised{name: "vm-controller", what: "the VirtualMachine controller", log: paths.vmControllerLog(), run: env.VMController,
		start: func() (operatortest.Running, error) {
			r, err := vmRunner.Run(env.ControlPlane, vmOpts)
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
	start           func() (operatortest.Running, error)
	// ready, when set, waits until a restarted process serves.
	ready func(ctx context.Context, done <-chan error) error
	run   operatortest.Running
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
		if err := c.run.Stop(operatortest.ManagerStopTimeout); err != nil {
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
func (c *supervised) watch(run operatortest.Running) {
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

// writeKubeconfig writes an admin kubeconfig for cp (harness/cluster's
// Kubeconfig of its configuration, context "envtest") to path, as a new
// file of mode 0600 (writeFile): never into a file or through a link that
// was there.
func writeKubeconfig(cp *controlplane.ControlPlane, path string) error {
	data, err := cluster.Kubeconfig(cp.Config, "envtest")
	if err != nil {
		return err
	}
	return writeFile(path, data)
}

// restartRequest is `env restart`'s request to the supervisor's loop.
type restartRequest struct {
	name  string
	reply chan error
}

// maxControlRequest bounds a request on the control socket, its newline
// included ("restart vm-controller\n" is 22 bytes): the supervisor reads
// no more of a connection than this, whatever a client sends.
// controlRequestTimeout bounds how long it waits for the request.
// maxControlReply bounds what env restart reads of the answer.
const (
	maxControlRequest     = 256
	controlRequestTimeout = 10 * time.Second
	maxControlReply       = 64 << 10
)

// errRequestTooLong answers a request longer than maxControlRequest.
var errRequestTooLong = fmt.Errorf("request longer than %d bytes: send \"restart manager\" or \"restart vm-controller\"", maxControlRequest)

// readControlRequest reads one request line from r, at most
// maxControlRequest bytes of it, and returns it without the newline.
func readControlRequest(r io.Reader) (string, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxControlRequest+1), maxControlRequest+1).ReadString('\n')
	if len(line) > maxControlRequest {
		return "", errRequestTooLong
	}
	if err != nil {
		return "", fmt.Errorf("incomplete request %q: %w", line, err)
	}
	return strings.TrimSpace(line), nil
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
				_ = conn.SetReadDeadline(time.Now().Add(controlRequestTimeout))
				line, err := readControlRequest(conn)
				if err != nil {
					fmt.Fprintf(conn, "error: %v\n", err)
					return
				}
				name, ok := strings.CutPrefix(line, "restart ")
				if !ok {
					fmt.Fprintf(conn, "error: unknown request %q: send \"restart manager\" or \"restart vm-controller\"\n", line)
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
