package manager

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeharness/kubeharness/internal/flagargs"
)

// FuzzFlags parses arbitrary manager command lines. Whatever parses must
// have a command line again, Flags, that parses back to the same options,
// and whatever Validate then accepts must be settings the manager can run
// with: leader election timings in order, a client rate limit that lets
// requests through, and webhook settings the webhooks can use.
func FuzzFlags(f *testing.F) {
	every, err := everyFlagSet().Flags()
	if err != nil {
		f.Fatal(err)
	}
	for _, args := range [][]string{
		nil, every,
		{"--overcommit-cpu-ratio=NaN", "--disable-webhooks"},
		{"--overcommit-memory-ratio=-0", "--overcommit-cpu-ratio=+Inf"},
		{"--kube-api-burst=-1"},
		{"--kube-api-qps=1e-45", "--kube-api-qps=3.5e38"},
		{"--webhook-extra-ip=::ffff:127.0.0.1", "--webhook-extra-ip=fe80::1%eth0", "--webhook-extra-dns-name="},
		{"--webhook-cert-duration=-1h", "--ca-rotation-settle=0", "--namespace=", "--webhook-service="},
		{"--sidecar-cpu-limit=1e-2147483647"},
		{"--sidecar-memory-request=1.5Gi", "--sidecar-memory-limit=1Gi", "--sidecar-cpu-request=0.0001"},
		{"--leader-elect", "--leader-elect-lease-duration=1ns", "--leader-elect-renew-deadline=2562047h47m16.854775807s"},
	} {
		f.Add(strings.Join(args, "\n"))
	}
	f.Fuzz(func(t *testing.T, lines string) {
		args := strings.Split(lines, "\n")
		var o Options
		if parseManagerFlags(t, &o, args) != nil {
			return
		}
		flags, err := o.Flags()
		if err != nil {
			t.Fatalf("options parsed from %q have no command line: %v", args, err)
		}
		var back Options
		if err := parseManagerFlags(t, &back, flags); err != nil {
			t.Fatalf("Flags made %q, which does not parse: %v", flags, err)
		}
		if diff := flagargs.Differences(normalized(o), normalized(back)); len(diff) > 0 {
			t.Fatalf("%q parsed back from %q differ in %v", flags, args, diff)
		}
		if err := o.Validate(); err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("Validate refused without saying why")
			}
			return
		}
		if o.LeaderElection && !(o.LeaseDuration > o.RenewDeadline && o.RenewDeadline > o.RetryPeriod && o.RetryPeriod > 0) {
			t.Fatalf("accepted leader election timings %s, %s, %s", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
		}
		// client-go rate-limits with a token bucket of KubeAPIBurst tokens
		// when KubeAPIQPS is set; one of fewer than none fails every request.
		if o.KubeAPIQPS > 0 && o.KubeAPIBurst < 0 {
			t.Fatalf("accepted a burst of %d requests", o.KubeAPIBurst)
		}
		if o.DisableWebhooks {
			return
		}
		for _, r := range []float64{o.Overcommit.CPURatio, o.Overcommit.MemoryRatio} {
			if !(r > 0) || math.IsInf(r, 0) {
				t.Fatalf("accepted overcommit ratio %v", r)
			}
		}
		res := o.Sidecar.SidecarResources
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, limit := res.Requests[name], res.Limits[name]
			if req.Sign() < 0 || req.Cmp(limit) > 0 {
				t.Fatalf("accepted a sidecar %s request %s with limit %s", name, req.String(), limit.String())
			}
		}
	})
}

// parseManagerFlags parses args into o as the manager binary does.
func parseManagerFlags(t *testing.T, o *Options, args []string) error {
	t.Helper()
	// A flag value has to be read at once: the watchdog's panic makes the
	// fuzzer report the input, where a hang would only stall the run.
	watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("parsing %q takes over 10s", args)) })
	defer watchdog.Stop()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	return fs.Parse(args)
}
