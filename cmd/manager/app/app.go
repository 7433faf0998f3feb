package app

import (
	"crypto/tls"
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/controller"
	playbookwebhook "github.com/kubeharness/kubeharness/webhook/playbook"
)

// LeaderElectionID names the Lease the manager replicas compete for.
const LeaderElectionID = "manager.kubeharness.dev"

// Options configure the manager. Their zero value is not useful: start from
// DefaultOptions or BindFlags.
type Options struct {
	MetricsAddr          string
	ProbeAddr            string
	LeaderElection       bool
	LeaderElectionNS     string
	WebhookHost          string
	WebhookPort          int
	WebhookCertDir       string
	EnableHTTP2          bool
	DisableWebhooks      bool
	SkipNameValidation   bool
	GracefulShutdownSecs int
}

// DefaultOptions are the settings of a manager started without flags.
func DefaultOptions() Options {
	return Options{
		MetricsAddr: ":8080",
		ProbeAddr:   ":8081",
		WebhookPort: webhook.DefaultPort,
	}
}

// BindFlags registers the manager's command-line flags on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	d := DefaultOptions()
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", d.MetricsAddr, `address the metrics endpoint binds to; "0" disables it`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", d.ProbeAddr, "address the /healthz and /readyz probes bind to")
	fs.BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader so that only one replica reconciles at a time")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the Pod's namespace)")
	fs.StringVar(&o.WebhookHost, "webhook-host", "", "address the webhook server listens on (default: all addresses)")
	fs.IntVar(&o.WebhookPort, "webhook-port", d.WebhookPort, "port the webhook server listens on")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "directory holding tls.crt and tls.key for the webhook server")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "serve webhooks and metrics over HTTP/2 too (off: HTTP/2 rapid-reset and stream-cancellation CVEs)")
	fs.BoolVar(&o.DisableWebhooks, "disable-webhooks", false, "run the controllers only")
}

// Scheme returns a scheme holding every type the manager handles.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(opsv1.AddToScheme(s))
	return s
}

// New builds a manager for cfg with every controller and webhook registered.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	var tlsOpts []func(*tls.Config)
	if !o.EnableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	tlsOpts = append(tlsOpts, func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 })

	mgrOpts := ctrl.Options{
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr, TLSOpts: tlsOpts},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.WebhookCertDir, TLSOpts: tlsOpts,
		}),
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
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Playbook controller: %w", err)
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
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return nil, fmt.Errorf("adding ready check: %w", err)
	}
	return mgr, nil
}
