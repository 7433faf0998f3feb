package vmcontroller

import (
	"github.com/kubeharness/kubeharness/internal/flagargs"
)

// Flags returns the command line that makes a vm-controller binary run
// with o: the inverse of BindFlags, listing only the settings that differ
// from the defaults. A harness that starts the controller as a process
// passes o this way instead of spelling the flags out by hand.
//
// It fails, naming the settings, when o holds something no flag can carry:
// NewDriver and Leading (functions), Controller.RateLimiter, and Identity.
// Identity has no flag on purpose: every replica of a Deployment gets the
// same flags, and replicas sharing an identity would each take the Lease
// as their own; a process names itself hostname_uuid.
func (o Options) Flags() ([]string, error) {
	d := DefaultOptions()
	var a flagargs.Args
	a.Int("workers", o.Workers, d.Workers)
	a.String("vm-driver", o.Driver, d.Driver)
	a.String("default-image", o.Controller.DefaultImage, d.Controller.DefaultImage)
	a.Duration("usage-refresh", o.Controller.UsageRefresh, d.Controller.UsageRefresh)
	a.Duration("failed-retry", o.Controller.FailedRetry, d.Controller.FailedRetry)
	a.Duration("orphan-sweep", o.Controller.OrphanSweep, d.Controller.OrphanSweep)
	a.String("max-vm-cpu", (&quantityFlag{q: &o.Controller.MaxCPU}).String(), (&quantityFlag{q: &d.Controller.MaxCPU}).String())
	a.String("max-vm-memory", (&quantityFlag{q: &o.Controller.MaxMemory}).String(), (&quantityFlag{q: &d.Controller.MaxMemory}).String())
	a.Bool("register-crd", o.RegisterCRD, d.RegisterCRD)
	a.Duration("resync-period", o.ResyncPeriod, d.ResyncPeriod)
	a.String("health-probe-bind-address", o.ProbeAddr, d.ProbeAddr)
	o.Election.Args(&a, d.Election)
	a.Float("kube-api-qps", o.KubeAPIQPS, d.KubeAPIQPS, 64)
	a.Int("kube-api-burst", o.KubeAPIBurst, d.KubeAPIBurst)

	if err := flagargs.RoundTrip("vm-controller", a.List(), o, (*Options).BindFlags, nil); err != nil {
		return nil, err
	}
	return a.List(), nil
}
