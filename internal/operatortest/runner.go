package operatortest

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
)

// The harness runs two controllers against a control plane of its own:
// the manager and the VirtualMachine controller, each as its
// ServiceAccount, in this process or as its binary. A Runner of the
// controller's settings starts it, and the Running it returns stops it.

// Running is a started controller.
type Running interface {
	// Done yields once, when the controller has stopped, with why.
	Done() <-chan error
	// Stop stops the controller and waits up to timeout for it.
	Stop(timeout time.Duration) error
}

// Runner starts a controller with settings O (manager.Options,
// vmcontroller.Options) against a control plane, as the controller's
// ServiceAccount (deploy.ImpersonateManager, deploy.ImpersonateVMController).
type Runner[O any] interface {
	Run(cp *controlplane.ControlPlane, opts O) (Running, error)
}

// ControllerOptions are the settings of a controller the harness runs as a
// binary: they turn into the binary's flags.
type ControllerOptions interface {
	manager.Options | vmcontroller.Options
	Flags() ([]string, error)
}

// controllerOf says what names the controller of settings O in errors and
// whom it is to the API server.
func controllerOf[O ControllerOptions]() (what string, identity func(*rest.Config) *rest.Config) {
	var o O
	switch any(o).(type) {
	case manager.Options:
		return "manager", deploy.ImpersonateManager
	default: // vmcontroller.Options: ControllerOptions admits no other.
		return "VirtualMachine controller", deploy.ImpersonateVMController
	}
}

// ControllerProcess runs a controller's binary, configured through its
// settings' Flags, with a kubeconfig (harness/cluster's Kubeconfig) that
// authenticates as the controller's ServiceAccount with a client
// certificate of that identity's own (AddUser), so that its RBAC applies
// whatever a client of the file asks for; the file holds no admin
// credentials.
type ControllerProcess[O ControllerOptions] struct {
	// Binary is the controller's executable.
	Binary string
	// Kubeconfig is where the controller's kubeconfig is written, with
	// os.WriteFile and mode 0600.
	Kubeconfig string
	// Log receives the controller's output.
	Log io.Writer
	// Started, when set, is told the process id once it runs.
	Started func(pid int)
	// Env is added to the controller's environment (client-go's feature
	// gates, KUBE_FEATURE_...).
	Env []string
	// Through, when set, is how the controller reaches the API server: it
	// is given the identity's own configuration (AddUser) and returns the
	// one the kubeconfig carries; the fault environment puts its proxy
	// there. Nil connects the controller directly.
	Through func(cp *controlplane.ControlPlane, own *rest.Config) (*rest.Config, error)
}

// ManagerProcess runs the manager's binary (cmd/manager).
type ManagerProcess = ControllerProcess[manager.Options]

// VMControllerProcess runs the VirtualMachine controller's binary
// (cmd/vm-controller).
type VMControllerProcess = ControllerProcess[vmcontroller.Options]

// Run implements Runner.
func (p ControllerProcess[O]) Run(cp *controlplane.ControlPlane, opts O) (Running, error) {
	what, identity := controllerOf[O]()
	args, err := opts.Flags()
	if err != nil {
		return nil, fmt.Errorf("the %s's settings as flags: %w", what, err)
	}
	as := identity(cp.Config).Impersonate
	conn, err := cp.AddUser(as.UserName, as.Groups...)
	if err != nil {
		return nil, err
	}
	if p.Through != nil {
		if conn, err = p.Through(cp, conn); err != nil {
			return nil, err
		}
	}
	kubeconfig, err := cluster.Kubeconfig(conn, "envtest")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the %s's kubeconfig: %w", what, err)
	}
	r, err := StartBinary(what, p.Binary, append([]string{"--kubeconfig=" + p.Kubeconfig}, args...), p.Env, p.Log, p.Started)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// StartBinary runs binary with args and env added to its environment
// (harness/process), its output to log, and tells started its process id;
// what names it in errors. It gets SIGTERM when this process dies, however
// it dies, and ends as on Stop (a manager releases its Lease).
func StartBinary(what, binary string, args, env []string, log io.Writer, started func(pid int)) (*BinaryRun, error) {
	p, err := process.Command{Path: binary, Args: args, Env: env, Name: what, Out: log, DeathSignal: syscall.SIGTERM}.Start()
	if err != nil {
		return nil, err
	}
	if started != nil {
		started(p.Pid())
	}
	r := &BinaryRun{p: p, done: make(chan error, 1)}
	go func() {
		<-p.Done()
		r.done <- p.Err()
	}()
	return r, nil
}

// BinaryRun is a controller running as its binary.
type BinaryRun struct {
	p    *process.Process
	done chan error
}

// Done implements Running.
func (r *BinaryRun) Done() <-chan error { return r.done }

// Kill sends SIGKILL and returns once the binary is gone: after it
// returns, the binary cannot act.
func (r *BinaryRun) Kill() error { return r.p.Kill() }

// Stop sends SIGTERM, then SIGKILL after timeout, and returns how the
// binary exited, or that it had to be killed.
func (r *BinaryRun) Stop(timeout time.Duration) error {
	if err := r.p.Stop(timeout); err != nil {
		return err
	}
	return r.p.Err()
}

// InProcessManager runs the manager in this process.
type InProcessManager struct{}

// Run implements Runner.
func (InProcessManager) Run(cp *controlplane.ControlPlane, opts manager.Options) (Running, error) {
	mgr, err := manager.New(deploy.ImpersonateManager(cp.Config), opts)
	if err != nil {
		return nil, err
	}
	return runInProcess(context.Background(), "the manager", mgr.Start), nil
}

// InProcessVMController runs the VirtualMachine controller in this
// process (StartVMController), logging to Log.
type InProcessVMController struct {
	Log logr.Logger
}

// Run implements Runner.
func (p InProcessVMController) Run(cp *controlplane.ControlPlane, opts vmcontroller.Options) (Running, error) {
	return StartVMController(cp, opts, p.Log), nil
}

// StartVMController runs the VirtualMachine controller against cp as its
// ServiceAccount until Stop, logging to log.
func StartVMController(cp *controlplane.ControlPlane, o vmcontroller.Options, log logr.Logger) *InProcessRun {
	return runInProcess(klog.NewContext(context.Background(), log), "the VirtualMachine controller", func(ctx context.Context) error {
		err := vmcontroller.Run(ctx, deploy.ImpersonateVMController(cp.Config), o)
		if err != nil {
			log.Error(err, "the VirtualMachine controller stopped")
		}
		return err
	})
}

// InProcessRun is a controller running in this process until Stop.
type InProcessRun struct {
	what    string
	cancel  context.CancelFunc
	stopped chan struct{}
	done    chan error
	err     error
}

// runInProcess runs run in a goroutine with a context derived from ctx
// that Stop cancels; what names it in errors.
func runInProcess(ctx context.Context, what string, run func(context.Context) error) *InProcessRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &InProcessRun{what: what, cancel: cancel, stopped: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		r.err = run(ctx)
		close(r.stopped)
		r.done <- r.err
	}()
	return r
}

// Done implements Running.
func (r *InProcessRun) Done() <-chan error { return r.done }

// Stop implements Running.
func (r *InProcessRun) Stop(timeout time.Duration) error {
	r.cancel()
	select {
	case <-r.stopped:
		return r.err
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %s", r.what, timeout)
	}
}
