package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
)

// The one way kubeharness brings up an environment on this machine: the
// envtest provider, `kubeharness env up` and `kubeharness bench` all call
// StartLocal, which runs each step in order and stops at the first failure:
//
//	control plane (etcd, kube-apiserver, optionally kube-controller-manager)
//	→ CRDs → config/rbac and config/webhook (calling 127.0.0.1)
//	→ the manager, as its ServiceAccount → the webhooks admit a dry-run Playbook
//	→ the VirtualMachine controller, when asked for, as its ServiceAccount
//
// They differ only in where the manager and the VirtualMachine controller
// run (this process or a binary) and in a few of their settings.

// LocalOptions configure StartLocal.
type LocalOptions struct {
	// Root is the repository root: config/ and the binaries' store are below it.
	Root string
	// Version is the Kubernetes patch version whose binaries run, as
	// binaries.Locate returns it.
	Version versions.Version
	// Controllers are the kube-controller-manager controllers to run
	// (controlplane.DefaultControllers); none runs kube-controller-manager
	// not at all.
	Controllers []string
	// Out receives the control plane's output; nil discards it.
	Out io.Writer
	// Manager adjusts the manager's settings, which start as
	// ManagerOptions(port).
	Manager func(*manager.Options)
	// Runner runs the manager; nil runs it in this process.
	Runner ManagerRunner
	// Progress, when set, is told each step as it begins, with the
	// environment as far as it is built.
	Progress func(step string, env *LocalEnv)
	// MadeBy is who the cluster's disposable marker (cluster.MarkDisposable)
	// names as its maker; empty means harness/cluster's default.
	MadeBy string
	// VMController, when set, runs the VirtualMachine controller too, as
	// its ServiceAccount, once the manager is ready.
	VMController *vmcontroller.Options
	// VMRunner runs the VirtualMachine controller; nil runs it in this
	// process, logging to VMControllerLog.
	VMRunner VMControllerRunner
	// VMControllerLog receives the VirtualMachine controller's log when it
	// runs in this process.
	VMControllerLog logr.Logger
	// Dir, when set, is where the control plane makes its directories
	// (controlplane.Options.Dir).
	Dir string
}

// LocalEnv is a control plane on this machine (harness/cluster's Envtest)
// with kubeharness installed and its manager running.
type LocalEnv struct {
	// Cluster is the Envtest provider's cluster: an admin's clients with
	// the operator's scheme (internal/scheme).
	Cluster *cluster.Cluster
	// ControlPlane is the Envtest provider's running control plane.
	ControlPlane *controlplane.ControlPlane
	// Client is an admin client with the operator's scheme: Cluster.Client.
	Client client.Client
	// WebhookPort is where the API server calls the webhooks, on 127.0.0.1.
	WebhookPort int
	// ManagerOptions are the settings the manager runs with.
	ManagerOptions manager.Options
	// Manager is the running manager.
	Manager RunningManager
	// ManagerReady is how long the manager took from its start until the
	// webhooks admitted a request through the API server.
	ManagerReady time.Duration
	// VMController is the running VirtualMachine controller, when asked for.
	VMController RunningVMController

	provider *cluster.Envtest
}

// VMControllerRunner starts the VirtualMachine controller against a
// control plane, as the controller's ServiceAccount
// (deploy.ImpersonateVMController).
type VMControllerRunner interface {
	RunVMController(cp *controlplane.ControlPlane, opts vmcontroller.Options) (RunningVMController, error)
}

// RunningVMController is a started VirtualMachine controller.
type RunningVMController interface {
	// Done yields once, when the controller has stopped, with why.
	Done() <-chan error
	// Stop stops the controller and waits up to timeout for it.
	Stop(timeout time.Duration) error
}

// InProcessVMController runs the VirtualMachine controller in this
// process (StartVMController), logging to Log.
type InProcessVMController struct {
	Log logr.Logger
}

// RunVMController implements VMControllerRunner.
func (p InProcessVMController) RunVMController(cp *controlplane.ControlPlane, opts vmcontroller.Options) (RunningVMController, error) {
	return StartVMController(cp, opts, p.Log), nil
}

// VMControllerRun is a VirtualMachine controller running in this process.
type VMControllerRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	result chan error
	err    error
}

// Done implements RunningVMController.
func (r *VMControllerRun) Done() <-chan error { return r.result }

// Stop stops it and waits up to timeout.
func (r *VMControllerRun) Stop(timeout time.Duration) error {
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		return fmt.Errorf("the VirtualMachine controller did not stop within %s", timeout)
	}
}

// StartVMController runs the VirtualMachine controller against cp as its
// ServiceAccount until Stop.
func StartVMController(cp *controlplane.ControlPlane, o vmcontroller.Options, log logr.Logger) *VMControllerRun {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), log))
	r := &VMControllerRun{cancel: cancel, done: make(chan struct{}), result: make(chan error, 1)}
	go func() {
		r.err = vmcontroller.Run(ctx, deploy.ImpersonateVMController(cp.Config), o)
		if r.err != nil {
			log.Error(r.err, "the VirtualMachine controller stopped")
		}
		close(r.done)
		r.result <- r.err
	}()
	return r
}

// ManagerRunner starts a manager against a control plane, as the manager's
// ServiceAccount (deploy.ImpersonateManager).
type ManagerRunner interface {
	RunManager(cp *controlplane.ControlPlane, opts manager.Options) (RunningManager, error)
}

// RunningManager is a started manager.
type RunningManager interface {
	// Done yields once, when the manager has stopped, with why.
	Done() <-chan error
	// Stop stops the manager and waits up to timeout for it.
	Stop(timeout time.Duration) error
}

// StartLocal brings up an environment (see LocalOptions). On failure it
// stops whatever it started and returns the first error.
func StartLocal(ctx context.Context, o LocalOptions) (*LocalEnv, error) {
	env := &LocalEnv{}
	if err := env.start(ctx, o); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return env, nil
}

func (env *LocalEnv) start(ctx context.Context, o LocalOptions) (err error) {
	step := func(s string) {
		if o.Progress != nil {
			o.Progress(s, env)
		}
	}

	step("starting etcd and kube-apiserver")
	env.provider = NewEnvtest(controlplane.Options{Root: o.Root, Version: o.Version, Controllers: o.Controllers, Out: o.Out, Dir: o.Dir})
	env.provider.MarkedBy = o.MadeBy
	if env.Cluster, err = env.provider.Start(ctx); err != nil {
		return err
	}
	env.ControlPlane, env.Client = env.provider.Running(), env.Cluster.Client
	step("installing config/rbac and config/webhook")
	if env.WebhookPort, err = InstallLocal(ctx, env.Client, o.Root); err != nil {
		return err
	}
	env.ManagerOptions = ManagerOptions(env.WebhookPort)
	if o.Manager != nil {
		o.Manager(&env.ManagerOptions)
	}
	step("starting the manager")
	start := time.Now()
	runner := o.Runner
	if runner == nil {
		runner = InProcessManager{}
	}
	if env.Manager, err = runner.RunManager(env.ControlPlane, env.ManagerOptions); err != nil {
		return err
	}
	step("waiting for the certificate through the CSR API and the webhooks to admit a dry-run Playbook")
	if err = deploy.WaitForWebhooks(ctx, env.Client, env.Manager.Done()); err != nil {
		return err
	}
	env.ManagerReady = time.Since(start)
	if o.VMController != nil {
		step("starting the VirtualMachine controller")
		vmRunner := o.VMRunner
		if vmRunner == nil {
			vmRunner = InProcessVMController{Log: o.VMControllerLog}
		}
		if env.VMController, err = vmRunner.RunVMController(env.ControlPlane, *o.VMController); err != nil {
			return err
		}
	}
	step("ready")
	return nil
}

// ManagerStopTimeout bounds how long Stop waits for the manager, and for
// the VirtualMachine controller.
const ManagerStopTimeout = 30 * time.Second

// Stop stops the VirtualMachine controller, then the manager, then the
// control plane; safe on a partly built environment.
func (e *LocalEnv) Stop() error {
	var errs []error
	if e.VMController != nil {
		errs = append(errs, e.VMController.Stop(ManagerStopTimeout))
	}
	if e.Manager != nil {
		errs = append(errs, e.Manager.Stop(ManagerStopTimeout))
	}
	if e.provider != nil {
		errs = append(errs, e.provider.Stop(context.Background()))
	}
	return errors.Join(errs...)
}

// InProcessManager runs the manager in this process.
type InProcessManager struct{}

// RunManager implements ManagerRunner.
func (InProcessManager) RunManager(cp *controlplane.ControlPlane, opts manager.Options) (RunningManager, error) {
	mgr, err := manager.New(deploy.ImpersonateManager(cp.Config), opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &inProcess{cancel: cancel, done: make(chan error, 1), stopped: make(chan struct{})}
	go func() {
		err := mgr.Start(ctx)
		m.err = err
		close(m.stopped)
		m.done <- err
	}()
	return m, nil
}

type inProcess struct {
	cancel  context.CancelFunc
	done    chan error
	stopped chan struct{}
	err     error
}

func (m *inProcess) Done() <-chan error { return m.done }

func (m *inProcess) Stop(timeout time.Duration) error {
	m.cancel()
	select {
	case <-m.stopped:
		return m.err
	case <-time.After(timeout):
		return fmt.Errorf("manager did not stop within %s", timeout)
	}
}

// ManagerProcess runs a manager binary, configured through
// manager.Options.Flags, with a kubeconfig that authenticates as its
// ServiceAccount (writeKubeconfigAs).
type ManagerProcess struct {
	// Binary is the manager executable.
	Binary string
	// Kubeconfig is where the manager's kubeconfig is written.
	Kubeconfig string
	// Log receives the manager's output.
	Log io.Writer
	// Started, when set, is told the process id once it runs.
	Started func(pid int)
	// Env is added to the manager's environment (client-go's feature
	// gates, KUBE_FEATURE_...).
	Env []string
}

// RunManager implements ManagerRunner.
func (p ManagerProcess) RunManager(cp *controlplane.ControlPlane, opts manager.Options) (RunningManager, error) {
	args, err := opts.Flags()
	if err != nil {
		return nil, err
	}
	if err := writeKubeconfigAs(cp, deploy.ImpersonateManager(cp.Config), p.Kubeconfig); err != nil {
		return nil, err
	}
	m, err := StartBinary("manager", p.Binary, append([]string{"--kubeconfig=" + p.Kubeconfig}, args...), p.Env, p.Log, p.Started)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// VMControllerProcess runs a vm-controller binary, configured through
// vmcontroller.Options.Flags, with a kubeconfig that authenticates as the
// controller's ServiceAccount (writeKubeconfigAs).
type VMControllerProcess struct {
	// Binary is the vm-controller executable.
	Binary string
	// Kubeconfig is where the controller's kubeconfig is written.
	Kubeconfig string
	// Log receives the controller's output.
	Log io.Writer
	// Started, when set, is told the process id once it runs.
	Started func(pid int)
	// Env is added to the controller's environment.
	Env []string
}

// RunVMController implements VMControllerRunner.
func (p VMControllerProcess) RunVMController(cp *controlplane.ControlPlane, opts vmcontroller.Options) (RunningVMController, error) {
	args, err := opts.Flags()
	if err != nil {
		return nil, err
	}
	if err := writeKubeconfigAs(cp, deploy.ImpersonateVMController(cp.Config), p.Kubeconfig); err != nil {
		return nil, err
	}
	r, err := StartBinary("VirtualMachine controller", p.Binary, append([]string{"--kubeconfig=" + p.Kubeconfig}, args...), p.Env, p.Log, p.Started)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// writeKubeconfigAs writes to path a kubeconfig for cp that authenticates
// as whom identity impersonates (deploy.ImpersonateManager,
// deploy.ImpersonateVMController) with a client certificate of that identity's
// own (AddUser), so that its RBAC applies whatever a client of the file
// asks for; the file holds no admin credentials.
func writeKubeconfigAs(cp *controlplane.ControlPlane, identity *rest.Config, path string) error {
	as := identity.Impersonate
	cfg, err := cp.AddUser(as.UserName, as.Groups...)
	if err != nil {
		return err
	}
	kubeconfig, err := controlplane.UserKubeConfig(cfg, as.UserName)
	if err != nil {
		return err
	}
	return os.WriteFile(path, kubeconfig, 0o600)
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

// BinaryRun is a started manager or VirtualMachine controller binary: a
// RunningManager and RunningVMController.
type BinaryRun struct {
	p    *process.Process
	done chan error
}

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
