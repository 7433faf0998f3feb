package vmcontroller

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
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
	var args []string
	str := func(name, v, def string) {
		if v != def {
			args = append(args, "--"+name+"="+v)
		}
	}
	boolean := func(name string, v, def bool) { str(name, strconv.FormatBool(v), strconv.FormatBool(def)) }
	duration := func(name string, v, def time.Duration) { str(name, v.String(), def.String()) }
	integer := func(name string, v, def int) { str(name, strconv.Itoa(v), strconv.Itoa(def)) }
	float := func(name string, v, def float64) {
		str(name, strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(def, 'g', -1, 64))
	}

	integer("workers", o.Workers, d.Workers)
	str("vm-driver", o.Driver, d.Driver)
	str("default-image", o.Controller.DefaultImage, d.Controller.DefaultImage)
	duration("usage-refresh", o.Controller.UsageRefresh, d.Controller.UsageRefresh)
	duration("failed-retry", o.Controller.FailedRetry, d.Controller.FailedRetry)
	boolean("register-crd", o.RegisterCRD, d.RegisterCRD)
	duration("resync-period", o.ResyncPeriod, d.ResyncPeriod)
	str("health-probe-bind-address", o.ProbeAddr, d.ProbeAddr)
	boolean("leader-elect", o.LeaderElection, d.LeaderElection)
	str("leader-election-namespace", o.LeaderElectionNS, d.LeaderElectionNS)
	duration("leader-elect-lease-duration", o.LeaseDuration, d.LeaseDuration)
	duration("leader-elect-renew-deadline", o.RenewDeadline, d.RenewDeadline)
	duration("leader-elect-retry-period", o.RetryPeriod, d.RetryPeriod)
	float("kube-api-qps", o.KubeAPIQPS, d.KubeAPIQPS)
	integer("kube-api-burst", o.KubeAPIBurst, d.KubeAPIBurst)

	// Prove the round trip: what the flags give must be o.
	var parsed Options
	fs := flag.NewFlagSet("vm-controller", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	parsed.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("the vm-controller's flags %q do not parse: %w", args, err)
	}
	if diff := optionDifferences(o, parsed); len(diff) > 0 {
		return nil, fmt.Errorf("no vm-controller flag carries these settings: %s", strings.Join(diff, ", "))
	}
	return args, nil
}

// optionDifferences names the fields (as Go paths such as
// Controller.RateLimiter) in which a and b differ. A function-valued field
// differs unless both are nil.
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
			case !reflect.DeepEqual(av.Interface(), bv.Interface()):
				diff = append(diff, path)
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return diff
}
