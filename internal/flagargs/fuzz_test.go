package flagargs

import (
	"flag"
	"io"
	"math"
	"strconv"
	"testing"
	"time"
)

// FuzzArgs writes arbitrary values with Args and parses them back with the
// standard flag types, which must give the same values (a float32 flag the
// same float32, NaN as NaN), leaving out exactly the defaults.
func FuzzArgs(f *testing.F) {
	f.Add("x", 1.15, float64(float32(0.1)), int64(time.Second), 3, true)
	f.Add("", math.NaN(), math.Inf(-1), int64(math.MinInt64), math.MinInt, false)
	f.Add("a=b\n--c", math.Copysign(0, -1), 5e-324, int64(-1), -1, true)
	f.Fuzz(func(t *testing.T, s string, f64, f32 float64, d int64, i int, b bool) {
		type values struct {
			S        string
			F64, F32 float64
			D        time.Duration
			I        int
			B        bool
		}
		want := values{S: s, F64: f64, F32: float64(float32(f32)), D: time.Duration(d), I: i, B: b}
		var a Args
		a.String("s", want.S, "def")
		a.Float("f64", want.F64, 2, 64)
		a.Float("f32", want.F32, 2, 32)
		a.Duration("d", want.D, time.Minute)
		a.Int("i", want.I, 7)
		a.Bool("b", want.B, false)
		var got values
		var f32v float32Value
		fs := flag.NewFlagSet("tool", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.StringVar(&got.S, "s", "def", "")
		fs.Float64Var(&got.F64, "f64", 2, "")
		fs.Var(&f32v, "f32", "")
		fs.DurationVar(&got.D, "d", time.Minute, "")
		fs.IntVar(&got.I, "i", 7, "")
		fs.BoolVar(&got.B, "b", false, "")
		f32v = 2
		if err := fs.Parse(a.List()); err != nil {
			t.Fatalf("%q does not parse: %v", a.List(), err)
		}
		got.F32 = float64(f32v)
		if diff := Differences(want, got); len(diff) > 0 {
			t.Fatalf("%q parsed back as %+v, want %+v: %v", a.List(), got, want, diff)
		}
		n := 0
		fs.Visit(func(*flag.Flag) { n++ })
		if n != len(a.List()) {
			t.Fatalf("%q sets %d flags", a.List(), n)
		}
	})
}

// float32Value is a flag.Value parsing a float32, as the manager's
// --kube-api-qps does.
type float32Value float32

func (v *float32Value) String() string { return "" }

func (v *float32Value) Set(s string) error {
	f, err := strconv.ParseFloat(s, 32)
	*v = float32Value(f)
	return err
}
