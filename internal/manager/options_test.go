package manager

import (
	"flag"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/internal/flagargs"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	o := DefaultOptions()
	o.LeaderElection = true
	o.LeaseDuration, o.RenewDeadline = 5*time.Second, 10*time.Second
	o.Sidecar.SidecarImage = ""
	o.Overcommit.CPURatio = -1
	o.KubeAPIBurst = -1
	err := o.Validate()
	if err == nil {
		t.Fatal("invalid options accepted")
	}
	for _, want := range []string{"--leader-elect-lease-duration", "--kube-api-burst", "sidecar injector", "node overcommit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("the defaults are invalid: %v", err)
	}
	o.DisableWebhooks, o.LeaderElection, o.KubeAPIBurst = true, false, 0
	if err := o.Validate(); err != nil {
		t.Errorf("webhook settings checked although webhooks are off: %v", err)
	}
}

// everyFlagSet is a valid Options whose every flag-settable field differs
// from DefaultOptions.
func everyFlagSet() Options {
	o := DefaultOptions()
	o.MetricsAddr, o.MetricsSecure, o.ProbeAddr = "127.0.0.1:9443", false, "127.0.0.1:9081"
	o.LeaderElection, o.LeaderElectionNS = true, "elsewhere"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 7*time.Second, 5*time.Second, 1500*time.Millisecond
	o.WebhookHost, o.WebhookPort, o.WebhookCertDir = "127.0.0.1", 10443, "/tmp/certs"
	o.Certs.Namespace, o.Certs.ServiceName = "ops", "hooks"
	o.Certs.ExtraDNSNames = []string{"localhost", "hooks.example"}
	o.WatchNamespaces = []string{"team-a", "team-b"}
	o.Certs.ExtraIPs = []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP("::1")}
	o.Certs.CertDuration, o.Certs.RotationSettle, o.Certs.ForbiddenRetry = 3*time.Hour, 2*time.Second, 300*time.Millisecond
	o.EnableHTTP2, o.DisableWebhooks = true, true
	o.KubeAPIQPS, o.KubeAPIBurst, o.AppServiceWorkers, o.PlaybookWorkers = 512.5, 1000, 9, 7
	o.Sidecar.InitImage, o.Sidecar.SidecarImage = "init:v2", "proxy:v2"
	o.Sidecar.SidecarResources.Requests[corev1.ResourceCPU] = resource.MustParse("20m")
	o.Sidecar.SidecarResources.Requests[corev1.ResourceMemory] = resource.MustParse("40Mi")
	o.Sidecar.SidecarResources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
	o.Sidecar.SidecarResources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	o.Overcommit.CPURatio, o.Overcommit.MemoryRatio = 1.15, 2.5
	return o
}

func TestFlagsRoundTrip(t *testing.T) {
	for name, o := range map[string]Options{"defaults": DefaultOptions(), "every flag set": everyFlagSet()} {
		args, err := o.Flags()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got Options
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		got.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%s: parsing %q: %v", name, args, err)
		}
		if diff := flagargs.Differences(normalized(o), normalized(got)); len(diff) > 0 {
			t.Errorf("%s: %q parse back different %v", name, args, diff)
		}
		if name == "defaults" && len(args) != 0 {
			t.Errorf("the defaults need no flags, got %q", args)
		}
	}
}

// TestFlagsCoverEveryFlag fails when a flag is added to BindFlags without a
// way for Flags to emit it.
func TestFlagsCoverEveryFlag(t *testing.T) {
	args, err := everyFlagSet().Flags()
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+f.Name+"=") }) {
			t.Errorf("--%s: not emitted by Flags for a non-default value (or everyFlagSet leaves it at its default)", f.Name)
		}
	})
}

func TestFlagsRefuseWhatNoFlagCarries(t *testing.T) {
	o := DefaultOptions()
	o.Certs.CADuration = time.Hour
	o.Certs.Canary = func() error { return nil }
	o.SkipNameValidation = true
	delete(o.Sidecar.SidecarResources.Limits, corev1.ResourceCPU)
	_, err := o.Flags()
	if err == nil {
		t.Fatal("settings without flags passed silently")
	}
	for _, want := range []string{"Certs.CADuration", "Certs.Canary", "SkipNameValidation", "Sidecar.SidecarResources"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}
