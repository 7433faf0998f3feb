package flagargs

import (
	"flag"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

type opts struct {
	Name  string
	Every time.Duration
	Ratio float64
	Tags  []string
	Hook  func()
}

type tags struct{ v *[]string }

func (t tags) String() string     { return "" }
func (t tags) Set(s string) error { *t.v = append(*t.v, s); return nil }

func (o *opts) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.Name, "name", "x", "")
	fs.DurationVar(&o.Every, "every", time.Second, "")
	fs.Float64Var(&o.Ratio, "ratio", 1.5, "")
	fs.Var(tags{&o.Tags}, "tag", "")
}

func TestArgsAndRoundTrip(t *testing.T) {
	o := opts{Name: "x", Every: 2 * time.Second, Ratio: 1.15, Tags: []string{"a", "b"}}
	var a Args
	a.String("name", o.Name, "x")
	a.Duration("every", o.Every, time.Second)
	a.Float("ratio", o.Ratio, 1.5, 64)
	a.Repeated("tag", o.Tags...)
	want := []string{"--every=2s", "--ratio=1.15", "--tag=a", "--tag=b"}
	if !slices.Equal(a.List(), want) {
		t.Fatalf("args %q, want %q (defaults left out)", a.List(), want)
	}
	if err := RoundTrip("tool", a.List(), o, (*opts).bind, nil); err != nil {
		t.Errorf("round trip: %v", err)
	}
	o.Hook = func() {}
	err := RoundTrip("tool", []string{"--every=2s"}, o, (*opts).bind, nil)
	if err == nil {
		t.Fatal("settings left out of the arguments passed")
	}
	for _, field := range []string{"Ratio", "Tags", "Hook"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%q does not name %s", err, field)
		}
	}
	// NaN equals nothing, not even the NaN it parses back as.
	if err := RoundTrip("tool", []string{"--ratio=NaN"}, opts{Name: "x", Every: time.Second, Ratio: math.NaN()}, (*opts).bind, nil); err != nil {
		t.Errorf("a NaN ratio: %v", err)
	}
	if err := RoundTrip("tool", []string{"--nope=1"}, o, (*opts).bind, nil); err == nil || !strings.Contains(err.Error(), "do not parse") {
		t.Errorf("an unknown flag: %v", err)
	}
}

func TestElectionCheck(t *testing.T) {
	timed := func(lease, renew, retry time.Duration) Election {
		return Election{LeaderElection: true, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry}
	}
	if err := timed(15*time.Second, 10*time.Second, 2*time.Second).Check(); err != nil {
		t.Errorf("valid timings refused: %v", err)
	}
	for _, bad := range [][3]time.Duration{{10 * time.Second, 10 * time.Second, time.Second}, {15 * time.Second, time.Second, 2 * time.Second}, {3 * time.Second, 2 * time.Second, 0}} {
		e := timed(bad[0], bad[1], bad[2])
		if err := e.Check(); err == nil || !strings.Contains(err.Error(), "--leader-elect-lease-duration") {
			t.Errorf("%v: %v", bad, err)
		}
		e.LeaderElection = false
		if err := e.Check(); err != nil {
			t.Errorf("%v without leader election: %v; the timings matter only when electing", bad, err)
		}
	}
	// The flags carry every field, and only what differs from the defaults.
	d := DefaultElection()
	e := timed(7*time.Second, 5*time.Second, 1500*time.Millisecond)
	e.LeaderElectionNS = "elsewhere"
	var a Args
	e.Args(&a, d)
	bind := func(e *Election, fs *flag.FlagSet) { e.BindFlags(fs, d, "works", "here") }
	if err := RoundTrip("tool", a.List(), e, bind, nil); err != nil {
		t.Errorf("Args and BindFlags disagree: %v", err)
	}
	var none Args
	d.Args(&none, d)
	if len(none.List()) != 0 {
		t.Errorf("the defaults' flags: %v, want none", none.List())
	}
}
