package vmcontroller

import (
	"flag"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/internal/flagargs"
)

// FuzzFlags parses arbitrary vm-controller command lines. Whatever parses
// must have a command line again, Flags, that parses back to the same
// options, and whatever Validate then accepts must be settings the
// controller can run with: leader election timings in order, positive
// periods, and a client rate limit that is the one asked for.
func FuzzFlags(f *testing.F) {
	every, err := everyFlagSet().Flags()
	if err != nil {
		f.Fatal(err)
	}
	for _, args := range [][]string{
		nil, every,
		{"--kube-api-qps=NaN"},
		{"--kube-api-qps=-1", "--kube-api-burst=-1"},
		{"--kube-api-qps=1e300"},
		{"--vm-driver=fake", "--workers=0", "--usage-refresh=-1s", "--failed-retry=0", "--default-image="},
		{"--leader-elect", "--leader-elect-retry-period=0"},
	} {
		f.Add(strings.Join(args, "\n"))
	}
	f.Fuzz(func(t *testing.T, lines string) {
		args := strings.Split(lines, "\n")
		var o Options
		if parseVMControllerFlags(&o, args) != nil {
			return
		}
		flags, err := o.Flags()
		if err != nil {
			t.Fatalf("options parsed from %q have no command line: %v", args, err)
		}
		var back Options
		if err := parseVMControllerFlags(&back, flags); err != nil {
			t.Fatalf("Flags made %q, which does not parse: %v", flags, err)
		}
		if diff := flagargs.Differences(o, back); len(diff) > 0 {
			t.Fatalf("%q parsed back from %q differ in %v", flags, args, diff)
		}
		if err := o.Validate(); err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("Validate refused without saying why")
			}
			return
		}
		if o.Workers < 1 || o.Controller.UsageRefresh <= 0 || o.Controller.FailedRetry <= 0 || o.Controller.DefaultImage == "" {
			t.Fatalf("accepted %d workers, usage refresh %s, failed retry %s, default image %q",
				o.Workers, o.Controller.UsageRefresh, o.Controller.FailedRetry, o.Controller.DefaultImage)
		}
		if o.LeaderElection && !(o.LeaseDuration > o.RenewDeadline && o.RenewDeadline > o.RetryPeriod && o.RetryPeriod > 0) {
			t.Fatalf("accepted leader election timings %s, %s, %s", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
		}
		// Run hands client-go float32(KubeAPIQPS): one that is not a
		// positive float32 turns the limit off, and a burst of fewer than
		// no requests fails every request.
		if qps := float32(o.KubeAPIQPS); !(qps > 0) || math.IsInf(float64(qps), 0) || o.KubeAPIBurst < 0 {
			t.Fatalf("accepted a rate limit of %v requests per second in bursts of %d", o.KubeAPIQPS, o.KubeAPIBurst)
		}
	})
}

// parseVMControllerFlags parses args into o as the vm-controller binary
// does.
func parseVMControllerFlags(o *Options, args []string) error {
	fs := flag.NewFlagSet("vm-controller", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	return fs.Parse(args)
}
