package operatortest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// EnvtestProvider runs etcd and kube-apiserver built by kubeharness, with
// the manager and the VirtualMachine controller in this process (or as
// their binaries: Binaries), and kube-controller-manager with
// controlplane.DefaultControllers (garbage collection, namespaces, Deployments). No
// scheduler or kubelet runs: Pods stay Pending.
type EnvtestProvider struct {
	Root      string
	Artifacts string
	// Version is what $K8S_VERSION asks for: a patch, a minor (its newest
	// patch), or nothing for versions.yaml's default. $KUBEBUILDER_ASSETS,
	// when set, wins, but must hold that version when one is asked for.
	Version versions.Selector
	// Binaries runs the manager and the VirtualMachine controller as
	// their binaries, bin/manager and bin/vm-controller below Root, each
	// as its ServiceAccount (ManagerProcess, VMControllerProcess), rather
	// than in this process: make e2e COVER=1 does, so that the counters
	// of their -cover builds are recorded spec by spec (harness/coverage),
	// which a go test binary's own cannot be. The fake driver lives in the
	// controller's process then, and FakeVMs steers it over loopback
	// (vmfixture.FakeVMsFileEnv).
	Binaries bool

	env        *LocalEnv
	logs       *os.File
	managerLog *os.File
	vmLog      *os.File
	private    string // the binaries' kubeconfigs and the fake driver's endpoint
}

// ControllersEnv says where the envtest provider runs the manager and the
// VirtualMachine controller: "in-process" (the default) or "binaries"
// (EnvtestProvider.Binaries).
const ControllersEnv = "KUBEHARNESS_CONTROLLERS"

// controllersFromEnv reads ControllersEnv.
func controllersFromEnv() (binaries bool, err error) {
	switch v := os.Getenv(ControllersEnv); v {
	case "", "in-process":
		return false, nil
	case "binaries":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: choose in-process (the default) or binaries", ControllersEnv, v)
	}
}

// FakeVMsServeTimeout bounds how long the envtest provider waits for a
// VirtualMachine controller binary to serve its fake driver.
const FakeVMsServeTimeout = 30 * time.Second

var _ cluster.Provider = &EnvtestProvider{}

// Name implements Provider.
func (p *EnvtestProvider) Name() string { return "envtest" }

// Offers lists the abilities every cluster of this provider has, as zero
// values (ProviderOffers).
func (*EnvtestProvider) Offers() []any { return []any{&Operator{}, LocalControlPlanes{}, Throwaway{}} }

// Start implements Provider.
func (p *EnvtestProvider) Start(ctx context.Context) (*cluster.Cluster, error) {
	if err := os.MkdirAll(p.Artifacts, 0o755); err != nil {
		return nil, err
	}
	cpLog, err := os.Create(filepath.Join(p.Artifacts, "controlplane.log"))
	if err != nil {
		return nil, err
	}
	p.logs = cpLog
	res, err := binaries.NewResolver(p.Root, cpLog)
	if err != nil {
		return nil, err
	}
	// kube-controller-manager too: the specs rely on garbage collection
	// and namespace deletion.
	_, version, err := binaries.Locate(ctx, res, p.Root, p.Version,
		binaries.Etcd, binaries.KubeAPIServer, binaries.KubeControllerManager)
	if err != nil {
		return nil, err
	}
	probe, err := controlplane.FreePorts(2)
	if err != nil {
		return nil, err
	}
	managerLogFile := filepath.Join(p.Artifacts, "manager.log")
	managerLog, err := os.Create(managerLogFile)
	if err != nil {
		return nil, err
	}
	p.managerLog = managerLog
	ctrl.SetLogger(zap.New(zap.WriteTo(managerLog), zap.Level(zapcore.Level(-4)), zap.UseDevMode(false), nanosecondTimes))

	vmOpts, fakeVMs, err := VMControllerOptions()
	if err != nil {
		return nil, err
	}
	if vmOpts.Driver == driver.DockerDriverName {
		// Before the control plane: without a daemon nothing would run.
		if err := vmfixture.EnsureVMImage(ctx, p.Root, cpLog); err != nil {
			if errors.Is(err, vmfixture.ErrNoDockerDaemon) {
				return nil, fmt.Errorf("%s=docker needs a Docker daemon: run make docker-up (%w)", VMDriverEnv, err)
			}
			return nil, fmt.Errorf("%s=docker: the image %s: %w", VMDriverEnv, vmfixture.VMImage, err)
		}
	}
	vmLogFile := filepath.Join(p.Artifacts, "vm-controller.log")
	vmLog, err := os.Create(vmLogFile)
	if err != nil {
		return nil, err
	}
	p.vmLog = vmLog
	local := LocalOptions{
		Root: p.Root, Version: version, Controllers: controlplane.DefaultControllers, Out: cpLog,
		VMController: &vmOpts, VMControllerLog: zap.New(zap.WriteTo(vmLog), zap.Level(zapcore.Level(-4)), zap.UseDevMode(false), nanosecondTimes),
		Manager: func(o *manager.Options) {
			o.Certs.RotationSettle, o.Certs.ForbiddenRetry = RotationSettle, ForbiddenRetry
			o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", probe[0])
			o.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", probe[1])
		},
	}
	fakeFile := ""
	if p.Binaries {
		if fakeFile, err = p.asBinaries(&local, managerLog, vmLog); err != nil {
			return nil, err
		}
	}
	env, err := StartLocal(ctx, local)
	if err != nil {
		return nil, err
	}
	p.env = env
	// The local environment's cluster: harness/cluster's Envtest connected
	// it (clients with the operator's scheme, the server's version).
	base := env.Cluster
	opts := env.ManagerOptions
	op := &Operator{
		Deployment: Deployment{
			ManagerLogFile: managerLogFile, VMControllerLogFile: vmLogFile,
			WebhookAddr: fmt.Sprintf("127.0.0.1:%d", env.WebhookPort),
			ProbeAddr:   opts.ProbeAddr, MetricsAddr: opts.MetricsAddr, VMDriver: vmOpts.Driver,
		},
		CertOptions: opts.Certs.Defaulted(), VMOptions: vmOpts.Controller,
	}
	switch {
	case fakeFile != "":
		if op.FakeVMs, err = vmfixture.ConnectFakeVMsFile(ctx, fakeFile, FakeVMsServeTimeout, env.VMController.Done()); err != nil {
			return nil, err
		}
	case fakeVMs != nil:
		op.FakeVMs = vmfixture.LocalFakeVMs(fakeVMs)
	}
	base.Abilities = append(base.Abilities, op, LocalControlPlanes{}, Throwaway{})
	return base, nil
}

// asBinaries has StartLocal run the manager and the VirtualMachine
// controller as their binaries, logging to managerLog and vmLog, with
// their kubeconfigs in a directory only this user can read; with the fake
// driver, it returns the file where the controller's process tells how to
// steer its driver.
func (p *EnvtestProvider) asBinaries(o *LocalOptions, managerLog, vmLog io.Writer) (fakeFile string, err error) {
	bin := map[string]string{}
	for _, name := range []string{"manager", "vm-controller"} {
		bin[name] = filepath.Join(p.Root, "bin", name)
		if _, err := os.Stat(bin[name]); err != nil {
			return "", fmt.Errorf("%s=binaries: %w (make manager vm-controller builds it)", ControllersEnv, err)
		}
	}
	// MkdirTemp makes it 0700.
	if p.private, err = os.MkdirTemp("", "kubeharness-controllers-"); err != nil {
		return "", err
	}
	o.Runner = ManagerProcess{Binary: bin["manager"], Kubeconfig: filepath.Join(p.private, "manager.kubeconfig"), Log: managerLog}
	vm := VMControllerProcess{Binary: bin["vm-controller"], Kubeconfig: filepath.Join(p.private, "vm-controller.kubeconfig"), Log: vmLog}
	if o.VMController.Driver == driver.FakeDriverName {
		// No flag carries a driver made here: the binary makes its own
		// fake, and serves it to this process.
		o.VMController.NewDriver = nil
		fakeFile = filepath.Join(p.private, "fake-vms.json")
		vm.Env = []string{vmfixture.FakeVMsFileEnv + "=" + fakeFile}
	}
	o.VMRunner = vm
	return fakeFile, nil
}

// nanosecondTimes writes a log line's time to the nanosecond: failure
// bundles cut a spec's lines out of the log by time.
func nanosecondTimes(o *zap.Options) { o.TimeEncoder = zapcore.RFC3339NanoTimeEncoder }

// VMDriverEnv chooses the VirtualMachine controller's driver on envtest:
// fake (the default: in memory, with knobs the specs use) or docker (the
// Docker daemon at $DOCKER_HOST, or the local socket).
const VMDriverEnv = "VM_DRIVER"

// VMControllerOptions are the settings of the VirtualMachine controller
// the harness runs: short retry and refresh periods, so that specs see
// them, and the driver $VM_DRIVER names; with the fake driver, the Fake
// is returned for specs to inspect and steer.
func VMControllerOptions() (vmcontroller.Options, *driver.Fake, error) {
	o := vmcontroller.DefaultOptions()
	o.ProbeAddr = "0"
	o.Controller.UsageRefresh = deploy.VMUsageRefresh
	o.Controller.FailedRetry = deploy.VMFailedRetry
	o.Controller.DefaultImage = vmfixture.VMImage
	o.Workers = 4
	o.KubeAPIQPS, o.KubeAPIBurst = 500, 1000
	switch name := os.Getenv(VMDriverEnv); name {
	case "", driver.FakeDriverName:
		fake := driver.NewFake()
		o.Driver = driver.FakeDriverName
		o.NewDriver = func() (driver.Driver, error) { return fake, nil }
		return o, fake, nil
	case driver.DockerDriverName:
		o.Driver = name
		return o, nil, nil
	default:
		return o, nil, fmt.Errorf("%s=%q: choose %s or %s", VMDriverEnv, name, driver.FakeDriverName, driver.DockerDriverName)
	}
}

// RotationSettle is how long a CA rotation keeps the old CA published in
// the harness (production default: 30s); long enough for the in-process
// webhook server to reload, short enough for specs.
const RotationSettle = 2 * time.Second

// ForbiddenRetry is how often the harness's manager tries a forbidden
// approval or injection again (production default: 2s): a spec that
// restores an RBAC rule waits for the next try.
const ForbiddenRetry = 250 * time.Millisecond

// ManagerOptions are the manager settings for a control plane that reaches
// the webhook server at https://127.0.0.1:<port>: the serving certificate
// carries 127.0.0.1 and localhost besides the Service names.
func ManagerOptions(port int) manager.Options {
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.WebhookHost, opts.WebhookPort = "127.0.0.1", port
	opts.Certs.ExtraIPs = []net.IP{net.IPv4(127, 0, 0, 1)}
	opts.Certs.ExtraDNSNames = []string{"localhost"}
	// A test API server has no other clients to protect.
	opts.KubeAPIQPS, opts.KubeAPIBurst = 500, 1000
	return opts
}

// Stop implements Provider.
func (p *EnvtestProvider) Stop(context.Context) error {
	var errs []error
	if p.env != nil {
		errs = append(errs, p.env.Stop())
	}
	if p.logs != nil {
		errs = append(errs, p.logs.Close())
	}
	if p.vmLog != nil {
		errs = append(errs, p.vmLog.Close())
	}
	if p.managerLog != nil {
		errs = append(errs, p.managerLog.Close())
	}
	if p.private != "" {
		errs = append(errs, os.RemoveAll(p.private))
	}
	return errors.Join(errs...)
}
