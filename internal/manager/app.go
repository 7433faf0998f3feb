package manager

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kubeharness/kubeharness/internal/flagargs"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/controller"
	appservicewebhook "github.com/kubeharness/kubeharness/webhook/appservice"
	"github.com/kubeharness/kubeharness/webhook/overcommit"
	playbookwebhook "github.com/kubeharness/kubeharness/webhook/playbook"
	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// LeaderElectionID names the Lease the manager replicas compete for.
const LeaderElectionID = "manager.kubeharness.dev"

// Namespace is the manager's namespace, on envtest too: its CA and serving
// Secrets, its webhook Service and its leader-election Lease live there. The
// value is defined in operator/certs (as certs.DefaultNamespace), which this
// package builds on and so cannot import it back.
const Namespace = certs.DefaultNamespace

// Options configure the manager. Their zero value is not useful: start from
// DefaultOptions or BindFlags.
type Options struct {
	// Certs configures the CSR-based serving certificate path, used unless
	// WebhookCertDir names certificate files to serve instead.
	Certs certs.Options

	MetricsAddr   string
	MetricsSecure bool
	ProbeAddr     string
	// Election is leader election on the Lease LeaderElectionID.
	flagargs.Election
	WebhookHost     string
	WebhookPort     int
	WebhookCertDir  string
	EnableHTTP2     bool
	DisableWebhooks bool
	// KubeAPIQPS and KubeAPIBurst limit the manager's requests to the API server.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// AppServiceWorkers is how many AppServices are reconciled at once.
	AppServiceWorkers int
	// PlaybookWorkers is how many Playbooks are reconciled at once: each
	// reconcile waits on a few API requests, so one worker makes the API
	// server's latency the bound on throughput.
	PlaybookWorkers int
	// WatchNamespaces, when set, limits the controllers to Playbooks,
	// AppServices and their children in these namespaces (the caches list
	// and watch only there); empty watches every namespace.
	WatchNamespaces []string
	// SkipNameValidation lets several managers run in one process.
	SkipNameValidation bool
	// Sidecar configures the Pod sidecar injector.
	Sidecar sidecar.Config
	// Overcommit configures the node allocatable overcommit webhook.
	Overcommit overcommit.Config
}

// DefaultOptions are the settings of a manager started without flags.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:       ":8443",
		MetricsSecure:     true,
		ProbeAddr:         ":8081",
		WebhookPort:       webhook.DefaultPort,
		Certs:             certs.Options{}.Defaulted(),
		Election:          flagargs.DefaultElection(),
		KubeAPIQPS:        50,
		KubeAPIBurst:      100,
		AppServiceWorkers: 4,
		PlaybookWorkers:   4,
		Sidecar:           sidecar.DefaultConfig(),
		Overcommit:        overcommit.DefaultConfig(),
	}
}

// BindFlags registers the manager's command-line flags on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	d := DefaultOptions()
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", d.MetricsAddr, `address the metrics endpoint binds to; "0" disables it`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", d.MetricsSecure, "serve metrics over HTTPS to callers the API server authenticates and authorizes (get on /metrics); false serves plain HTTP to anyone")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", d.ProbeAddr, "address the /healthz and /readyz probes bind to")
	o.Election.BindFlags(fs, d.Election, "reconciles", "the Pod's namespace")
	fs.StringVar(&o.WebhookHost, "webhook-host", "", "address the webhook server listens on (default: all addresses)")
	fs.IntVar(&o.WebhookPort, "webhook-port", d.WebhookPort, "port the webhook server listens on")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "serve tls.crt and tls.key from this directory instead of issuing a certificate through the CSR API")
	fs.StringVar(&o.Certs.Namespace, "namespace", Namespace, "the manager's namespace: CA and serving Secrets, webhook Service")
	fs.StringVar(&o.Certs.ServiceName, "webhook-service", certs.DefaultServiceName, "the webhook Service whose DNS names the serving certificate carries")
	fs.Var(&stringList{&o.WatchNamespaces}, "watch-namespace", "reconcile only in this namespace (repeatable; default: every namespace)")
	fs.Var(&stringList{&o.Certs.ExtraDNSNames}, "webhook-extra-dns-name", "extra DNS name for the serving certificate (repeatable)")
	fs.Var(&ipList{&o.Certs.ExtraIPs}, "webhook-extra-ip", "extra IP for the serving certificate (repeatable)")
	fs.DurationVar(&o.Certs.CertDuration, "webhook-cert-duration", certs.DefaultCertDuration, "lifetime asked for the serving certificate; renewed at two thirds")
	fs.DurationVar(&o.Certs.RotationSettle, "ca-rotation-settle", certs.DefaultRotationSettle, "how long a CA rotation keeps the old CA published after the serving certificate switched")
	fs.DurationVar(&o.Certs.ForbiddenRetry, "forbidden-retry", certs.DefaultForbiddenRetry, "how often a certificate approval or caBundle injection refused for lack of permission is tried again")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "serve webhooks and metrics over HTTP/2 too (off: HTTP/2 rapid-reset and stream-cancellation CVEs)")
	fs.BoolVar(&o.DisableWebhooks, "disable-webhooks", false, "run the controllers only")
	o.KubeAPIQPS = d.KubeAPIQPS
	fs.Var((*positiveFloat32)(&o.KubeAPIQPS), "kube-api-qps", "requests per second the manager may send to the API server")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", d.KubeAPIBurst, "requests the manager may send to the API server in a burst")
	fs.IntVar(&o.AppServiceWorkers, "appservice-workers", d.AppServiceWorkers, "AppServices reconciled at once")
	fs.IntVar(&o.PlaybookWorkers, "playbook-workers", d.PlaybookWorkers, "Playbooks reconciled at once")
	o.Sidecar.BindFlags(fs)
	o.Overcommit.BindFlags(fs)
}

// Validate reports every setting New cannot run with, all at once: leader
// election timings out of order, a negative request burst, and sidecar or overcommit settings whose
// webhooks would refuse or break what they admit. New calls it first, before
// it connects anywhere; nothing else validates the options again.
func (o Options) Validate() error {
	var errs []error
	if err := o.Election.Check(); err != nil {
		errs = append(errs, err)
	}
	// client-go fails every request with a burst below zero.
	if o.KubeAPIQPS > 0 && o.KubeAPIBurst < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must not be negative, not %d", o.KubeAPIBurst))
	}
	if !o.DisableWebhooks {
		if err := o.Sidecar.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("sidecar injector: %w", err))
		}
		if err := o.Overcommit.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("node overcommit: %w", err))
		}
	}
	return errors.Join(errs...)
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves metrics over HTTPS behind the API server's
// authentication and authorization unless told otherwise, as kubebuilder's
// scaffold does: metrics name every object the manager touches.
func metricsOptions(o Options, tlsOpts []func(*tls.Config)) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr, TLSOpts: tlsOpts}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

// New builds a manager for cfg with every controller and webhook registered.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if o.KubeAPIQPS > 0 {
		cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	}
	var tlsOpts []func(*tls.Config)
	if !o.EnableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	tlsOpts = append(tlsOpts, func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 })
	webhookTLS := tlsOpts
	var serving *certs.Serving
	if o.WebhookCertDir == "" && !o.DisableWebhooks {
		serving = &certs.Serving{}
		webhookTLS = append(append([]func(*tls.Config){}, tlsOpts...), serving.TLSOpts)
	}
	o.Certs = o.Certs.Defaulted()

	mgrOpts := ctrl.Options{
		Scheme:                        scheme.New(),
		Metrics:                       metricsOptions(o, tlsOpts),
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.WebhookCertDir, TLSOpts: webhookTLS,
		}),
		// Secrets are read in the manager's own namespace only. ConfigMaps,
		// Deployments and Services are cached in every namespace, unfiltered:
		// Playbooks and AppServices live in any namespace, and their
		// controllers must see objects of their children's names that they
		// do not own (to refuse to adopt them, and to hear when they go),
		// which a label-selected cache would hide.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Certs.Namespace: {}}},
		}},
	}
	if len(o.WatchNamespaces) > 0 {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			mgrOpts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if o.SkipNameValidation {
		t := true
		mgrOpts.Controller.SkipNameValidation = &t
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}

	if err := (&controller.PlaybookReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("playbook-controller"),
		Workers:  o.PlaybookWorkers,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Playbook controller: %w", err)
	}

	if err := (&controller.AppServiceReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("appservice-controller"), Workers: o.AppServiceWorkers,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the AppService controller: %w", err)
	}

	if err := mgr.Add(leaderLog{log: mgr.GetLogger().WithName("leader-election")}); err != nil {
		return nil, fmt.Errorf("adding the leadership log: %w", err)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	if o.DisableWebhooks {
		if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return nil, fmt.Errorf("adding ready check: %w", err)
		}
		return mgr, nil
	}
	if err := playbookwebhook.SetupWebhookWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Playbook webhooks: %w", err)
	}
	if err := appservicewebhook.SetupWebhookWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the AppService webhook: %w", err)
	}
	if err := sidecar.SetupWebhookWithManager(mgr, o.Sidecar, o.Certs.Namespace); err != nil {
		return nil, fmt.Errorf("setting up the sidecar injector: %w", err)
	}
	if err := overcommit.SetupWebhookWithManager(mgr, o.Overcommit); err != nil {
		return nil, fmt.Errorf("setting up the node overcommit webhook: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return nil, fmt.Errorf("adding ready check: %w", err)
	}
	if serving == nil {
		return mgr, nil
	}
	o.Certs.Canary = WebhookCanary(mgr.GetClient(), canaryAddr(o.WebhookHost, o.WebhookPort), o.Certs.DNSNames()[0])
	ready, err := certs.Setup(mgr, o.Certs, serving)
	if err != nil {
		return nil, fmt.Errorf("setting up the certificate path: %w", err)
	}
	if err := mgr.AddReadyzCheck("certificates", ready.Check); err != nil {
		return nil, fmt.Errorf("adding ready check: %w", err)
	}
	return mgr, nil
}

type stringList struct{ v *[]string }

func (l *stringList) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l *stringList) Set(s string) error {
	*l.v = append(*l.v, s)
	return nil
}

type ipList struct{ v *[]net.IP }

func (l *ipList) String() string {
	if l.v == nil {
		return ""
	}
	var s []string
	for _, ip := range *l.v {
		s = append(s, ip.String())
	}
	return strings.Join(s, ",")
}

func (l *ipList) Set(s string) error {
	ip := net.ParseIP(s)
	if ip == nil {
		return fmt.Errorf("%q is not an IP address", s)
	}
	*l.v = append(*l.v, ip)
	return nil
}

// positiveFloat32 is a flag.Value holding a number greater than 0.
type positiveFloat32 float32

func (f *positiveFloat32) String() string {
	return strconv.FormatFloat(float64(*f), 'g', -1, 32)
}

func (f *positiveFloat32) Set(v string) error {
	q, err := strconv.ParseFloat(v, 32)
	if err != nil || !(q > 0) || math.IsInf(q, 0) {
		return fmt.Errorf("%q is not a positive number", v)
	}
	*f = positiveFloat32(q)
	return nil
}
