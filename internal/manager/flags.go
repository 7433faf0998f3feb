package manager

import (
	"flag"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	var args []string
	str := func(name, v, def string) {
		if v != def {
			args = append(args, "--"+name+"="+v)
		}
	}
	boolean := func(name string, v, def bool) { str(name, strconv.FormatBool(v), strconv.FormatBool(def)) }
	duration := func(name string, v, def time.Duration) { str(name, v.String(), def.String()) }
	integer := func(name string, v, def int) { str(name, strconv.Itoa(v), strconv.Itoa(def)) }
	float := func(name string, v, def float64, bits int) {
		str(name, strconv.FormatFloat(v, 'g', -1, bits), strconv.FormatFloat(def, 'g', -1, bits))
	}

	str("metrics-bind-address", o.MetricsAddr, d.MetricsAddr)
	boolean("metrics-secure", o.MetricsSecure, d.MetricsSecure)
	str("health-probe-bind-address", o.ProbeAddr, d.ProbeAddr)
	boolean("leader-elect", o.LeaderElection, d.LeaderElection)
	str("leader-election-namespace", o.LeaderElectionNS, d.LeaderElectionNS)
	duration("leader-elect-lease-duration", o.LeaseDuration, d.LeaseDuration)
	duration("leader-elect-renew-deadline", o.RenewDeadline, d.RenewDeadline)
	duration("leader-elect-retry-period", o.RetryPeriod, d.RetryPeriod)
	str("webhook-host", o.WebhookHost, d.WebhookHost)
	integer("webhook-port", o.WebhookPort, d.WebhookPort)
	str("webhook-cert-dir", o.WebhookCertDir, d.WebhookCertDir)
	c, dc := o.Certs.Defaulted(), d.Certs
	str("namespace", c.Namespace, dc.Namespace)
	str("webhook-service", c.ServiceName, dc.ServiceName)
	for _, name := range c.ExtraDNSNames {
		args = append(args, "--webhook-extra-dns-name="+name)
	}
	for _, ip := range c.ExtraIPs {
		args = append(args, "--webhook-extra-ip="+ip.String())
	}
	duration("webhook-cert-duration", c.CertDuration, dc.CertDuration)
	duration("ca-rotation-settle", c.RotationSettle, dc.RotationSettle)
	boolean("enable-http2", o.EnableHTTP2, d.EnableHTTP2)
	boolean("disable-webhooks", o.DisableWebhooks, d.DisableWebhooks)
	float("kube-api-qps", float64(o.KubeAPIQPS), float64(d.KubeAPIQPS), 32)
	integer("kube-api-burst", o.KubeAPIBurst, d.KubeAPIBurst)
	integer("appservice-workers", o.AppServiceWorkers, d.AppServiceWorkers)
	str("sidecar-init-image", o.Sidecar.InitImage, d.Sidecar.InitImage)
	str("sidecar-image", o.Sidecar.SidecarImage, d.Sidecar.SidecarImage)
	quantity := func(name string, list, def corev1.ResourceList, res corev1.ResourceName) {
		v, ok := list[res]
		if !ok {
			return // no flag removes a resource; the check below reports it
		}
		dv, dok := def[res]
		if !dok || v.Cmp(dv) != 0 {
			args = append(args, "--"+name+"="+v.String())
		}
	}
	sr, dsr := o.Sidecar.SidecarResources, d.Sidecar.SidecarResources
	quantity("sidecar-cpu-request", sr.Requests, dsr.Requests, corev1.ResourceCPU)
	quantity("sidecar-memory-request", sr.Requests, dsr.Requests, corev1.ResourceMemory)
	quantity("sidecar-cpu-limit", sr.Limits, dsr.Limits, corev1.ResourceCPU)
	quantity("sidecar-memory-limit", sr.Limits, dsr.Limits, corev1.ResourceMemory)
	float("overcommit-cpu-ratio", o.Overcommit.CPURatio, d.Overcommit.CPURatio, 64)
	float("overcommit-memory-ratio", o.Overcommit.MemoryRatio, d.Overcommit.MemoryRatio, 64)

	// Prove the round trip: what the flags give must be o.
	var parsed Options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	parsed.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("the manager's flags %q do not parse: %w", args, err)
	}
	if diff := optionDifferences(normalized(o), normalized(parsed)); len(diff) > 0 {
		return nil, fmt.Errorf("no manager flag carries these settings: %s", strings.Join(diff, ", "))
	}
	return args, nil
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

// optionDifferences names the fields (as Go paths such as
// Certs.CADuration) in which a and b differ, comparing quantities by value.
// A function-valued field differs unless both are nil.
func optionDifferences(a, b Options) []string {
	var diff []string
	var walk func(prefix string, a, b reflect.Value)
	walk = func(prefix string, a, b reflect.Value) {
		for i := range a.NumField() {
			f := a.Type().Field(i)
			path := prefix + f.Name
			av, bv := a.Field(i), b.Field(i)
			switch {
			case f.Type.Kind() == reflect.Func:
				if !av.IsNil() || !bv.IsNil() {
					diff = append(diff, path)
				}
			case f.Type.Kind() == reflect.Struct && strings.HasPrefix(f.Type.PkgPath(), "github.com/kubeharness/"):
				walk(path+".", av, bv)
			case !equality.Semantic.DeepEqual(av.Interface(), bv.Interface()):
				diff = append(diff, path)
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return diff
}
