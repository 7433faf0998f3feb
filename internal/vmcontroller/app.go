package vmcontroller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/internal/flagargs"
	"github.com/kubeharness/kubeharness/operator/vm"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
	clientset "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned"
	vmscheme "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned/scheme"
	informers "github.com/kubeharness/kubeharness/operator/vm/generated/informers/externalversions"
)

// Leader election takes the Lease in the controller's namespace.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=kubeharness-vm-system

// LeaseName names the Lease the controller's replicas compete for.
const LeaseName = "vm-controller.kubeharness.dev"

// DefaultNamespace is the controller's namespace as config/vm deploys it
// (apart from the manager's: its Docker credentials live there), and where
// the Lease lives when neither --leader-election-namespace nor
// $POD_NAMESPACE says.
const DefaultNamespace = "kubeharness-vm-system"

// Options configure the process.
type Options struct {
	Controller vm.Options
	// Workers is how many VirtualMachines are synced at once.
	Workers int
	// Driver names the driver: docker or fake.
	Driver string
	// RegisterCRD installs or upgrades the CRD at start-up; otherwise it
	// must be installed (config/crd).
	RegisterCRD bool
	// ResyncPeriod is the informer's resync; 0 disables it (the usage
	// refresh requeues running VirtualMachines itself).
	ResyncPeriod time.Duration
	// ProbeAddr serves /healthz and /readyz; "0" disables them.
	ProbeAddr string

	// Election is leader election on a Lease.
	flagargs.Election
	// Identity names this replica in the Lease; empty means hostname_uuid.
	Identity string
	// KubeAPIQPS and KubeAPIBurst limit the requests to the API server.
	KubeAPIQPS   float64
	KubeAPIBurst int

	// NewDriver, when set, makes the driver instead of driver.ForName
	// (specs hand in a fake they inspect).
	NewDriver func() (driver.Driver, error)
	// Leading, when set, is told when this replica starts and stops
	// leading.
	Leading func(leading bool)
}

// DefaultOptions are the settings of a controller started without flags.
func DefaultOptions() Options {
	return Options{
		Controller:   vm.DefaultOptions(),
		Workers:      2,
		Driver:       "docker",
		ProbeAddr:    ":8081",
		Election:     flagargs.DefaultElection(),
		KubeAPIQPS:   20,
		KubeAPIBurst: 30,
	}
}

// BindFlags registers the controller's flags on fs, with DefaultOptions'
// values as defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	d := DefaultOptions()
	fs.IntVar(&o.Workers, "workers", d.Workers, "VirtualMachines synced at once")
	fs.StringVar(&o.Driver, "vm-driver", d.Driver, "what runs a VirtualMachine: docker (a container of the Docker daemon at $DOCKER_HOST, TLS from $DOCKER_TLS_VERIFY and $DOCKER_CERT_PATH) or fake (in memory)")
	fs.StringVar(&o.Controller.DefaultImage, "default-image", d.Controller.DefaultImage, "image of VirtualMachines without spec.image")
	fs.DurationVar(&o.Controller.UsageRefresh, "usage-refresh", d.Controller.UsageRefresh, "how often a running server's CPU and memory use is read into the status")
	fs.DurationVar(&o.Controller.FailedRetry, "failed-retry", d.Controller.FailedRetry, "how long a VirtualMachine whose server cannot be made (missing image, name taken) waits before the next attempt")
	fs.DurationVar(&o.Controller.OrphanSweep, "orphan-sweep", d.Controller.OrphanSweep, "how often servers whose VirtualMachine is gone (deleted without its finalizer) are looked for and removed; one sweep also runs at start-up")
	fs.Var(&quantityFlag{q: &o.Controller.MaxCPU}, "max-vm-cpu", "the most CPU a VirtualMachine may ask for, e.g. 4 or 2500m (default: what the driver's host has)")
	fs.Var(&quantityFlag{q: &o.Controller.MaxMemory}, "max-vm-memory", "the most memory a VirtualMachine may ask for, e.g. 8Gi (default: what the driver's host has)")
	fs.BoolVar(&o.RegisterCRD, "register-crd", false, "create the VirtualMachine CRD, or update an older one, and wait until it is served, before starting (needs RBAC on customresourcedefinitions)")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", 0, "informer resync period; 0 disables it")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", d.ProbeAddr, `address /healthz and /readyz bind to; "0" disables them`)
	o.Election.BindFlags(fs, d.Election, "syncs", "$POD_NAMESPACE, then "+DefaultNamespace)
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", d.KubeAPIQPS, "requests per second to the API server")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", d.KubeAPIBurst, "requests to the API server in a burst")
}

// Validate reports every setting Run cannot work with, at once.
func (o Options) Validate() error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, not %d", o.Workers))
	}
	if o.NewDriver == nil && !driver.Known(o.Driver) {
		errs = append(errs, fmt.Errorf("--vm-driver %q: choose one of %v", o.Driver, driver.Names()))
	}
	if o.Controller.UsageRefresh <= 0 {
		errs = append(errs, fmt.Errorf("--usage-refresh must be positive, not %s", o.Controller.UsageRefresh))
	}
	if o.Controller.FailedRetry <= 0 {
		errs = append(errs, fmt.Errorf("--failed-retry must be positive, not %s", o.Controller.FailedRetry))
	}
	if o.Controller.DefaultImage == "" {
		errs = append(errs, errors.New("--default-image must not be empty"))
	} else if err := driver.ValidateImage(o.Controller.DefaultImage); err != nil {
		errs = append(errs, fmt.Errorf("--default-image: %w", err))
	}
	if o.Controller.OrphanSweep <= 0 {
		errs = append(errs, fmt.Errorf("--orphan-sweep must be positive, not %s", o.Controller.OrphanSweep))
	}
	if o.Controller.MaxCPU.Sign() < 0 || o.Controller.MaxMemory.Sign() < 0 {
		errs = append(errs, fmt.Errorf("--max-vm-cpu (%s) and --max-vm-memory (%s) must not be negative", o.Controller.MaxCPU.String(), o.Controller.MaxMemory.String()))
	}
	// client-go takes a QPS that is not a positive float32 for no limit at
	// all, and fails every request with a burst below zero.
	if qps := float32(o.KubeAPIQPS); !(qps > 0) || math.IsInf(float64(qps), 0) {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be a positive number of at most %g, not %v", math.MaxFloat32, o.KubeAPIQPS))
	}
	if o.KubeAPIBurst < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must not be negative, not %d", o.KubeAPIBurst))
	}
	if err := o.Election.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run runs the controller against cfg until ctx is done: it registers the
// CRD when asked, then, as the leader when leader election is on, starts
// the informers and the workers. It returns nil on a clean stop and an
// error when the controller cannot run or loses its leadership.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	cfg.UserAgent = vm.ControllerName

	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	vms, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	newDriver := o.NewDriver
	if newDriver == nil {
		newDriver = func() (driver.Driver, error) { return driver.ForName(o.Driver) }
	}
	drv, err := newDriver()
	if err != nil {
		return fmt.Errorf("driver %s: %w", o.Driver, err)
	}
	if o.RegisterCRD {
		ext, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if err := vm.RegisterCRD(ctx, ext); err != nil {
			if ctx.Err() != nil {
				// Told to stop while waiting for the CRD to be served: a
				// stop, as at any later point, not a failure to start.
				logger.Info("Stopped while registering the CRD", "reason", context.Cause(ctx))
				return nil
			}
			return err
		}
	}

	// Events name VirtualMachines: the scheme that records them knows the type.
	utilruntime.Must(vmscheme.AddToScheme(kubescheme.Scheme))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(kubescheme.Scheme, corev1.EventSource{Component: vm.ControllerName})

	health := &probes{}
	if o.ProbeAddr != "" && o.ProbeAddr != "0" {
		stop, err := health.serve(o.ProbeAddr)
		if err != nil {
			return err
		}
		defer stop()
	}

	run := func(ctx context.Context) error {
		factory := informers.NewSharedInformerFactory(vms, o.ResyncPeriod)
		c, err := vm.NewController(ctx, vms, factory.Cloudnative().V1alpha1().VirtualMachines(), drv, recorder, o.Controller)
		if err != nil {
			return err
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		return c.Run(ctx, o.Workers)
	}
	// Ready once the CRD is served and the driver made: a follower is ready
	// too, or a rolling update would wait for a leader to step down.
	health.ready.Store(true)
	if !o.LeaderElection {
		return run(ctx)
	}

	ns := o.LeaderElectionNS
	if ns == "" {
		ns = os.Getenv("POD_NAMESPACE")
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	id := o.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, LeaseName, kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		return err
	}
	var runErr error
	lost := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: LeaseName,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Leading", "lease", ns+"/"+LeaseName, "identity", id)
				if o.Leading != nil {
					o.Leading(true)
				}
				runErr = run(ctx)
			},
			OnStoppedLeading: func() {
				if o.Leading != nil {
					o.Leading(false)
				}
				close(lost)
			},
		},
	})
	if err != nil {
		return err
	}
	health.elector = elector
	logger.Info("Waiting to lead", "lease", ns+"/"+LeaseName, "identity", id)
	elector.Run(ctx)
	if runErr != nil {
		return runErr
	}
	select {
	case <-lost:
		if ctx.Err() == nil {
			return errors.New("lost the leadership: stopping, so that no two replicas sync at once")
		}
	default:
	}
	return nil
}

// probes serves /healthz (the process answers and, while leading, renews
// its Lease) and /readyz (the driver is made and the CRD served).
type probes struct {
	ready   atomic.Bool
	elector *leaderelection.LeaderElector
}

func (p *probes) serve(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if p.elector != nil {
			if err := p.elector.Check(20 * time.Second); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !p.ready.Load() {
			http.Error(w, "starting: registering the CRD or making the driver", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// quantityFlag is a resource.Quantity flag; the zero quantity prints as "".
type quantityFlag struct{ q *resource.Quantity }

func (f *quantityFlag) String() string {
	if f.q == nil || f.q.IsZero() {
		return ""
	}
	return f.q.String()
}

func (f *quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a quantity (e.g. 4, 2500m, 8Gi): %w", s, err)
	}
	*f.q = q
	return nil
}
