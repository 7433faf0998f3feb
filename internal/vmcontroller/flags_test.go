package vmcontroller

import (
	"flag"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/internal/flagargs"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// everyFlagSet is a valid Options whose every flag-settable field differs
// from DefaultOptions.
func everyFlagSet() Options {
	o := DefaultOptions()
	o.Workers, o.Driver = 7, driver.FakeDriverName
	o.Controller.DefaultImage = "registry.example:5000/vm/base:v2"
	o.Controller.UsageRefresh, o.Controller.FailedRetry = 1500*time.Millisecond, 3*time.Second
	o.Controller.OrphanSweep = 90 * time.Second
	o.Controller.MaxCPU, o.Controller.MaxMemory = resource.MustParse("2500m"), resource.MustParse("8Gi")
	o.RegisterCRD, o.ResyncPeriod, o.ProbeAddr = true, 10*time.Minute, "0"
	o.LeaderElection, o.LeaderElectionNS = true, "elsewhere"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 7*time.Second, 5*time.Second, 1500*time.Millisecond
	o.KubeAPIQPS, o.KubeAPIBurst = 512.5, 1000
	return o
}

func TestEveryFlagSetIsValid(t *testing.T) {
	if err := everyFlagSet().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestValidateRefusesRateLimitsClientGoIgnores: client-go takes a QPS that
// is not a positive float32 for no limit at all, and fails every request
// with a negative burst.
func TestValidateRefusesRateLimitsClientGoIgnores(t *testing.T) {
	for _, tc := range []struct {
		qps   float64
		burst int
		want  string
	}{
		{math.NaN(), 30, "--kube-api-qps"}, {-1, 30, "--kube-api-qps"}, {0, 30, "--kube-api-qps"},
		{1e300, 30, "--kube-api-qps"}, {20, -1, "--kube-api-burst"},
	} {
		o := DefaultOptions()
		o.KubeAPIQPS, o.KubeAPIBurst = tc.qps, tc.burst
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("QPS %v, burst %d: %v; want an error naming %s", tc.qps, tc.burst, err, tc.want)
		}
	}
}

func TestFlagsRoundTrip(t *testing.T) {
	for name, o := range map[string]Options{"defaults": DefaultOptions(), "every flag set": everyFlagSet()} {
		args, err := o.Flags()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got Options
		fs := flag.NewFlagSet("vm-controller", flag.ContinueOnError)
		got.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%s: parsing %q: %v", name, args, err)
		}
		if diff := flagargs.Differences(o, got); len(diff) > 0 {
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
	fs := flag.NewFlagSet("vm-controller", flag.ContinueOnError)
	o.BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+f.Name+"=") }) {
			t.Errorf("--%s: not emitted by Flags for a non-default value (or everyFlagSet leaves it at its default)", f.Name)
		}
	})
}

func TestFlagsRefuseWhatNoFlagCarries(t *testing.T) {
	o := DefaultOptions()
	o.Identity = "replica-a"
	o.NewDriver = func() (driver.Driver, error) { return driver.NewFake(), nil }
	o.Leading = func(bool) {}
	o.Controller.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()
	_, err := o.Flags()
	if err == nil {
		t.Fatal("settings without flags passed silently")
	}
	for _, want := range []string{"Identity", "NewDriver", "Leading", "Controller.RateLimiter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}
