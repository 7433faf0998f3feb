package faultenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/faults"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// FaultEnv is an environment of its own for a spec that breaks things:
// its own control plane (with kube-controller-manager), the manager binary
// reaching the API server through a fault proxy, optionally the
// VirtualMachine controller binary, and a timeline of every fault
// injected. Breaking it never disturbs the suite's shared cluster.
type FaultEnv struct {
	*operatortest.LocalEnv
	Timeline *faults.Timeline
	// Proxy stands between the manager and the API server.
	Proxy *faults.Proxy
	// ProbeAddr is the manager's health probe address (host:port).
	ProbeAddr string
	// Dir holds the environment's logs.
	Dir string

	runner operatortest.ManagerProcess
	logs   []*os.File
}

// FaultEnvOptions configure StartFaultEnv.
type FaultEnvOptions struct {
	// Root is the repository root; the manager and vm-controller binaries
	// are taken from its bin/ (make manager vm-controller builds them).
	Root string
	// Version is the Kubernetes version, as binaries.Locate
	// returns it.
	Version versions.Version
	// Dir receives controlplane.log, manager.log and vm-controller.log.
	Dir string
	// Manager adjusts the manager's settings.
	Manager func(*manager.Options)
	// VMs runs the VirtualMachine controller too, with the fake driver.
	VMs bool
}

// StartFaultEnv starts a FaultEnv and returns once the webhooks admit.
func StartFaultEnv(ctx context.Context, o FaultEnvOptions) (*FaultEnv, error) {
	env := &FaultEnv{Timeline: &faults.Timeline{}, Dir: o.Dir}
	if err := env.start(ctx, o); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return env, nil
}

func (env *FaultEnv) start(ctx context.Context, o FaultEnvOptions) error {
	managerBin := filepath.Join(o.Root, "bin", "manager")
	vmBin := filepath.Join(o.Root, "bin", "vm-controller")
	for _, bin := range []string{managerBin, vmBin} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("fault specs run the binaries: %s is missing; run `make manager vm-controller` (make e2e builds them)", bin)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	open := func(name string) (*os.File, error) {
		f, err := os.Create(filepath.Join(o.Dir, name))
		if err == nil {
			env.logs = append(env.logs, f)
		}
		return f, err
	}
	cpLog, err := open("controlplane.log")
	if err != nil {
		return err
	}
	managerLog, err := open("manager.log")
	if err != nil {
		return err
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return err
	}
	env.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	env.runner = operatortest.ManagerProcess{
		Binary: managerBin, Kubeconfig: filepath.Join(o.Dir, "manager.kubeconfig"), Log: managerLog,
		Through: env.throughProxy,
	}
	lo := operatortest.LocalOptions{
		Root: o.Root, Version: o.Version, Controllers: controlplane.DefaultControllers, Out: cpLog,
		Runner: env.runner,
		Manager: func(m *manager.Options) {
			m.ProbeAddr = env.ProbeAddr
			m.Certs.RotationSettle = operatortest.RotationSettle
			if o.Manager != nil {
				o.Manager(m)
			}
		},
	}
	if o.VMs {
		vmLog, err := open("vm-controller.log")
		if err != nil {
			return err
		}
		vo := vmcontroller.DefaultOptions()
		vo.Driver, vo.ProbeAddr, vo.Workers = driver.FakeDriverName, "0", 4
		vo.Controller.UsageRefresh, vo.Controller.FailedRetry, vo.Controller.DefaultImage = deploy.VMUsageRefresh, deploy.VMFailedRetry, vmfixture.VMImage
		vo.KubeAPIQPS, vo.KubeAPIBurst = 500, 1000
		lo.VMController = &vo
		lo.VMRunner = operatortest.VMControllerProcess{Binary: vmBin, Kubeconfig: filepath.Join(o.Dir, "vm-controller.kubeconfig"), Log: vmLog}
	}
	local, err := operatortest.StartLocal(ctx, lo)
	env.LocalEnv = local
	return err
}

// throughProxy is how the manager reaches the API server: through the
// environment's proxy, which it starts in front of the API server the
// first time. The manager's kubeconfig carries the certificate the proxy
// issued for it (Proxy.ClientConfig), and the proxy passes the manager's
// requests on with own, the certificate of the manager's ServiceAccount
// (AddUser). Neither holds the admin's credentials.
func (env *FaultEnv) throughProxy(cp *controlplane.ControlPlane, own *rest.Config) (*rest.Config, error) {
	if env.Proxy == nil {
		cert, err := cp.ServingCertificate()
		if err != nil {
			return nil, err
		}
		if env.Proxy, err = faults.NewProxy(cp.Config, cert, env.Timeline); err != nil {
			return nil, err
		}
	}
	return env.Proxy.ClientConfig(own), nil
}

// Kill kills a control-plane process with SIGKILL and records it.
func (env *FaultEnv) Kill(comp controlplane.Component) error {
	env.Timeline.Mark("kill -9 " + string(comp))
	return env.ControlPlane.Kill(comp)
}

// Restart restarts a control-plane process (SIGTERM, start, ready) and
// records the time it was away.
func (env *FaultEnv) Restart(ctx context.Context, comp controlplane.Component) error {
	end := env.Timeline.Begin(fmt.Sprintf("restart %s (SIGTERM, SIGKILL after %s; down until ready again)", comp, controlplane.RestartGrace))
	defer end()
	return env.ControlPlane.Restart(ctx, comp)
}

// Pause freezes a control-plane process (SIGSTOP); the returned function
// continues it (SIGCONT) and records how long it was frozen.
func (env *FaultEnv) Pause(comp controlplane.Component) (resume func() error, err error) {
	end := env.Timeline.Begin("SIGSTOP " + string(comp) + " (frozen until SIGCONT)")
	if err := env.ControlPlane.Pause(comp); err != nil {
		end()
		return nil, err
	}
	return func() error {
		defer end()
		return env.ControlPlane.Resume(comp)
	}, nil
}

// StopManager stops the manager (SIGTERM): its controllers and webhooks
// are down until StartManager.
func (env *FaultEnv) StopManager() (end func(), err error) {
	end = env.Timeline.Begin("manager stopped (webhooks and controllers down)")
	if err := env.Manager.Stop(operatortest.ManagerStopTimeout); err != nil {
		return end, fmt.Errorf("stopping the manager: %w", err)
	}
	return end, nil
}

// StartManager starts the manager again with the settings it ran with.
func (env *FaultEnv) StartManager() error {
	m, err := env.runner.Run(env.ControlPlane, env.ManagerOptions)
	if err != nil {
		return err
	}
	env.Manager = m
	return nil
}

// Healthy reports whether the environment can serve another spec as it
// stands: every control-plane process runs, the manager answers /readyz,
// and its webhooks default a dry-run Playbook through the API server. A
// suite whose specs break one environment in turn asks it between them.
func (env *FaultEnv) Healthy(ctx context.Context) error {
	if err := env.ControlPlane.Exited(); err != nil {
		return err
	}
	if err := env.Ready(ctx); err != nil {
		return fmt.Errorf("the manager is not ready: %w", err)
	}
	pb := &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{GenerateName: "healthy-", Namespace: metav1.NamespaceDefault},
		Spec: opsv1.PlaybookSpec{Abstract: " healthy "}}
	if err := env.Client.Create(ctx, pb, client.DryRunAll); err != nil {
		return fmt.Errorf("a dry-run Playbook was not admitted: %w", err)
	}
	if pb.Spec.Abstract != "healthy" {
		return fmt.Errorf("a dry-run Playbook was admitted undefaulted (abstract %q): the defaulting webhook did not run", pb.Spec.Abstract)
	}
	return nil
}

// Ready asks the manager's /readyz: nil when it answers 200.
func (env *FaultEnv) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.ProbeAddr+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s: %s", resp.Status, body)
	}
	return nil
}

// WriteBundle writes what a person needs to see what the faults did:
// faults.txt (the timeline and the proxy's counts) and the environment's
// logs, into dir.
func (env *FaultEnv) WriteBundle(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	text := "Faults injected (UTC):\n" + env.Timeline.String()
	if env.Proxy != nil {
		s := env.Proxy.Stats()
		text += fmt.Sprintf("\nFault proxy between the manager and the API server: %d requests, %d delayed, %d answered with an injected error, %d reset; %d refused for want of credentials\n",
			s.Requests, s.Delayed, s.Errors, s.Resets, s.Refused)
	}
	errs := []error{os.WriteFile(filepath.Join(dir, "faults.txt"), []byte(text), 0o644)}
	for _, f := range env.logs {
		_ = f.Sync()
		data, err := os.ReadFile(f.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.WriteFile(filepath.Join(dir, "faultenv-"+filepath.Base(f.Name())), data, 0o644))
	}
	return errors.Join(errs...)
}

// Stop stops everything; safe on a partly started environment.
func (env *FaultEnv) Stop() error {
	var errs []error
	if env.LocalEnv != nil {
		errs = append(errs, env.LocalEnv.Stop())
	}
	if env.Proxy != nil {
		errs = append(errs, env.Proxy.Close())
	}
	for _, f := range env.logs {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// FaultSettleTimeout bounds how long a spec waits for everything to
// converge after a fault ended.
const FaultSettleTimeout = 90 * time.Second
