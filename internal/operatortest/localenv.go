package operatortest

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/repo"
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
	Runner Runner[manager.Options]
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
	VMRunner Runner[vmcontroller.Options]
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
	Manager Running
	// ManagerReady is how long the manager took from its start until the
	// webhooks admitted a request through the API server.
	ManagerReady time.Duration
	// VMController is the running VirtualMachine controller, when asked for.
	VMController Running

	provider *cluster.Envtest
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
	plane, err := repo.ControlPlane(o.Root, o.Version, controlplane.Options{Controllers: o.Controllers, Out: o.Out, Dir: o.Dir})
	if err != nil {
		return err
	}
	env.provider = NewEnvtest(o.Root, plane)
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
	if env.Manager, err = runner.Run(env.ControlPlane, env.ManagerOptions); err != nil {
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
		if env.VMController, err = vmRunner.Run(env.ControlPlane, *o.VMController); err != nil {
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
