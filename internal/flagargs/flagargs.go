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

// CheckLeaderElection fails unless lease > renew > retry > 0, as client-go's
// leader election needs, naming the flags.
func CheckLeaderElection(lease, renew, retry time.Duration) error {
	if lease > renew && renew > retry && retry > 0 {
		return nil
	}
	return fmt.Errorf("leader election needs --leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > --leader-elect-retry-period (%s) > 0",
		lease, renew, retry)
}
