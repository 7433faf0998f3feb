package manager

import (
	"net"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeharness/kubeharness/internal/flagargs"
)

// Flags returns the command line that makes a manager binary run with o:
// the inverse of BindFlags, listing only the settings that differ from the
// defaults. A harness that starts the manager as a process passes o this
// way instead of spelling the flags out by hand.
//
// It fails, naming the settings, when o holds something no flag can carry
// (a readiness canary, the init container's resources, a CA lifetime): the
// process would otherwise run with settings other than o's without a word.
func (o Options) Flags() ([]string, error) {
	d := DefaultOptions()
	var a flagargs.Args
	a.String("metrics-bind-address", o.MetricsAddr, d.MetricsAddr)
	a.Bool("metrics-secure", o.MetricsSecure, d.MetricsSecure)
	a.String("health-probe-bind-address", o.ProbeAddr, d.ProbeAddr)
	o.Election.Args(&a, d.Election)
	a.String("webhook-host", o.WebhookHost, d.WebhookHost)
	a.Int("webhook-port", o.WebhookPort, d.WebhookPort)
	a.String("webhook-cert-dir", o.WebhookCertDir, d.WebhookCertDir)
	c, dc := o.Certs.Defaulted(), d.Certs
	a.String("namespace", c.Namespace, dc.Namespace)
	a.String("webhook-service", c.ServiceName, dc.ServiceName)
	a.Repeated("watch-namespace", o.WatchNamespaces...)
	a.Repeated("webhook-extra-dns-name", c.ExtraDNSNames...)
	for _, ip := range c.ExtraIPs {
		a.Repeated("webhook-extra-ip", ip.String())
	}
	a.Duration("webhook-cert-duration", c.CertDuration, dc.CertDuration)
	a.Duration("ca-rotation-settle", c.RotationSettle, dc.RotationSettle)
	a.Duration("forbidden-retry", c.ForbiddenRetry, dc.ForbiddenRetry)
	a.Bool("enable-http2", o.EnableHTTP2, d.EnableHTTP2)
	a.Bool("disable-webhooks", o.DisableWebhooks, d.DisableWebhooks)
	a.Float("kube-api-qps", float64(o.KubeAPIQPS), float64(d.KubeAPIQPS), 32)
	a.Int("kube-api-burst", o.KubeAPIBurst, d.KubeAPIBurst)
	a.Int("appservice-workers", o.AppServiceWorkers, d.AppServiceWorkers)
	a.Int("playbook-workers", o.PlaybookWorkers, d.PlaybookWorkers)
	a.String("sidecar-init-image", o.Sidecar.InitImage, d.Sidecar.InitImage)
	a.String("sidecar-image", o.Sidecar.SidecarImage, d.Sidecar.SidecarImage)
	quantity := func(name string, list, def corev1.ResourceList, res corev1.ResourceName) {
		v, ok := list[res]
		if !ok {
			return // no flag removes a resource; the round trip reports it
		}
		if dv, dok := def[res]; !dok || v.Cmp(dv) != 0 {
			a.Repeated(name, v.String())
		}
	}
	sr, dsr := o.Sidecar.SidecarResources, d.Sidecar.SidecarResources
	quantity("sidecar-cpu-request", sr.Requests, dsr.Requests, corev1.ResourceCPU)
	quantity("sidecar-memory-request", sr.Requests, dsr.Requests, corev1.ResourceMemory)
	quantity("sidecar-cpu-limit", sr.Limits, dsr.Limits, corev1.ResourceCPU)
	quantity("sidecar-memory-limit", sr.Limits, dsr.Limits, corev1.ResourceMemory)
	a.Float("overcommit-cpu-ratio", o.Overcommit.CPURatio, d.Overcommit.CPURatio, 64)
	a.Float("overcommit-memory-ratio", o.Overcommit.MemoryRatio, d.Overcommit.MemoryRatio, 64)

	if err := flagargs.RoundTrip("manager", a.List(), o, (*Options).BindFlags, normalized); err != nil {
		return nil, err
	}
	return a.List(), nil
}

// normalized is o as flags can express it, for comparison: the certificate
// options defaulted, IPs in one form, empty lists nil.
func normalized(o Options) Options {
	o.Certs = o.Certs.Defaulted()
	var ips []net.IP
	for _, ip := range o.Certs.ExtraIPs {
		ips = append(ips, ip.To16())
	}
	o.Certs.ExtraIPs = ips
	if len(o.Certs.ExtraDNSNames) == 0 {
		o.Certs.ExtraDNSNames = nil
	}
	return o
}
