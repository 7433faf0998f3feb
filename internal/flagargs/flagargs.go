package flagargs

import (
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
)

// Args collects command-line arguments.
type Args struct{ list []string }

// String adds --name=v unless v is def.
func (a *Args) String(name, v, def string) {
	if v != def {
		a.list = append(a.list, "--"+name+"="+v)
	}
}

// Bool adds --name=v unless v is def.
func (a *Args) Bool(name string, v, def bool) {
	a.String(name, strconv.FormatBool(v), strconv.FormatBool(def))
}

// Duration adds --name=v unless v is def.
func (a *Args) Duration(name string, v, def time.Duration) { a.String(name, v.String(), def.String()) }

// Int adds --name=v unless v is def.
func (a *Args) Int(name string, v, def int) { a.String(name, strconv.Itoa(v), strconv.Itoa(def)) }

// Float adds --name=v, written in the fewest digits that read back as the
// same float of that many bits, unless v is def.
func (a *Args) Float(name string, v, def float64, bits int) {
	a.String(name, strconv.FormatFloat(v, 'g', -1, bits), strconv.FormatFloat(def, 'g', -1, bits))
}

// Repeated adds --name=v for each of vs (a repeatable flag).
func (a *Args) Repeated(name string, vs ...string) {
	for _, v := range vs {
		a.list = append(a.list, "--"+name+"="+v)
	}
}

// List returns the arguments collected.
func (a *Args) List() []string { return a.list }

// RoundTrip parses args with bind (the binary's BindFlags, on a zero T) and
// fails unless the result equals want once both went through normalize (nil:
// none), naming the fields that differ: settings no flag carries.
func RoundTrip[T any](binary string, args []string, want T, bind func(*T, *flag.FlagSet), normalize func(T) T) error {
	var parsed T
	fs := flag.NewFlagSet(binary, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bind(&parsed, fs)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("the %s flags %q do not parse: %w", binary, args, err)
	}
	if normalize != nil {
		want, parsed = normalize(want), normalize(parsed)
	}
	if diff := Differences(want, parsed); len(diff) > 0 {
		return fmt.Errorf("no %s flag carries these settings: %s", binary, strings.Join(diff, ", "))
	}
	return nil
}

// Differences names the fields (as Go paths such as Certs.CADuration) in
// which the structs a and b differ, descending into this module's structs
// and comparing quantities by value and NaN floats as equal. A function-valued field differs unless
// both are nil.
func Differences(a, b any) []string {
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
			case f.Type.Kind() == reflect.Float32 || f.Type.Kind() == reflect.Float64:
				// A NaN flag parses back as NaN, which equals nothing.
				if x, y := av.Float(), bv.Float(); x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
					diff = append(diff, path)
				}
			case !equality.Semantic.DeepEqual(av.Interface(), bv.Interface()):
				diff = append(diff, path)
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return diff
}

// Election is how a binary of this repository elects its leader on a
// Lease: the manager and the VirtualMachine controller embed it, so that
// its flags, their defaults and their check have one home.
type Election struct {
	LeaderElection   bool
	LeaderElectionNS string
	// LeaseDuration, RenewDeadline and RetryPeriod time leader election: a
	// leader that dies without releasing the Lease is replaced within about
	// LeaseDuration + RetryPeriod.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// DefaultElection is client-go's usual timing, leader election off.
func DefaultElection() Election {
	return Election{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// BindFlags binds e's flags to fs, with d's values as defaults;
// namespaceHelp says where the Lease lives when --leader-election-namespace
// is not given.
func (e *Election) BindFlags(fs *flag.FlagSet, d Election, what, namespaceHelp string) {
	fs.BoolVar(&e.LeaderElection, "leader-elect", d.LeaderElection, "elect a leader on a Lease so that only one replica "+what+" at a time")
	fs.StringVar(&e.LeaderElectionNS, "leader-election-namespace", d.LeaderElectionNS, "namespace of the leader-election Lease (default: "+namespaceHelp+")")
	fs.DurationVar(&e.LeaseDuration, "leader-elect-lease-duration", d.LeaseDuration, "how long followers wait before taking over a Lease its leader stopped renewing")
	fs.DurationVar(&e.RenewDeadline, "leader-elect-renew-deadline", d.RenewDeadline, "how long the leader keeps trying to renew before it gives leadership up; less than the lease duration")
	fs.DurationVar(&e.RetryPeriod, "leader-elect-retry-period", d.RetryPeriod, "how often candidates try to acquire or renew the Lease")
}

// Args adds e's flags that differ from d to a.
func (e Election) Args(a *Args, d Election) {
	a.Bool("leader-elect", e.LeaderElection, d.LeaderElection)
	a.String("leader-election-namespace", e.LeaderElectionNS, d.LeaderElectionNS)
	a.Duration("leader-elect-lease-duration", e.LeaseDuration, d.LeaseDuration)
	a.Duration("leader-elect-renew-deadline", e.RenewDeadline, d.RenewDeadline)
	a.Duration("leader-elect-retry-period", e.RetryPeriod, d.RetryPeriod)
}

// Check fails, when leader election is on, unless lease > renew > retry >
// 0, as client-go's leader election needs, naming the flags.
func (e Election) Check() error {
	if !e.LeaderElection || e.LeaseDuration > e.RenewDeadline && e.RenewDeadline > e.RetryPeriod && e.RetryPeriod > 0 {
		return nil
	}
	return fmt.Errorf("leader election needs --leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > --leader-elect-retry-period (%s) > 0",
		e.LeaseDuration, e.RenewDeadline, e.RetryPeriod)
}
