package safequantity_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// costly are quantities resource.ParseQuantity spends seconds to minutes
// on, each of them.
var costly = []string{"1e-2147483647", "2E6024865272343", "1e-100000000", "0." + strings.Repeat("0", 100000) + "1"}

// TestParseRefusesCostlyForms: Parse refuses costly quantities at once, and
// CheckJSON finds them, as strings or numbers, where the paths say, under
// duplicate keys too.
func TestParseRefusesCostlyForms(t *testing.T) {
	for _, s := range costly {
		start := time.Now()
		if _, err := safequantity.Parse(s); err == nil {
			t.Errorf("Parse(%.40q) accepted it", s)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Parse(%.40q) took %s", s, d)
		}
	}
	for _, s := range []string{"1", "500m", "64Mi", "1.5Gi", "2E", "1e3", "+1e-999", "8Ei"} {
		if _, err := safequantity.Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	doc := `{"spec":{"resources":{"limits":{"cpu":"1e-2147483647","memory":"1Gi"}},"envs":[{"value":"1e-2147483647"},` +
		`{"valueFrom":{"resourceFieldRef":{"divisor":2E6024865272343}}}]},"spec":{"resources":{"requests":{"cpu":"` + costly[3] + `"}}}}`
	errs := safequantity.CheckJSON([]byte(doc),
		[]string{"spec", "resources", "limits", "*"}, []string{"spec", "resources", "requests", "*"},
		[]string{"spec", "envs", "*", "valueFrom", "resourceFieldRef", "divisor"})
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	want := []string{"spec.resources.limits.cpu", "spec.envs[1].valueFrom.resourceFieldRef.divisor", "spec.resources.requests.cpu"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("CheckJSON found %q, want %q", fields, want)
	}
}

// FuzzParse checks that Parse answers at once whatever it is given, and
// that what it accepts is cheap to use: printed, compared with quantities
// of far-off scales and read as a decimal. CheckJSON agrees with Check.
func FuzzParse(f *testing.F) {
	for _, s := range append([]string{"1", "500m", "64Mi", "1.5Gi", "2E", "1e3", "-1e-999", "0.000000001", "9223372036854775807", "8Ei", ""}, costly[:3]...) {
		f.Add(s)
	}
	tiny, huge := resource.MustParse("1n"), resource.MustParse("1e999")
	f.Fuzz(func(t *testing.T, s string) {
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("no answer within 10s for %.100q", s)) })
		defer watchdog.Stop()
		q, err := safequantity.Parse(s)
		checkErr := safequantity.Check(s)
		if checkErr != nil && err == nil {
			t.Fatalf("Parse accepted %q, which Check refuses: %v", s, checkErr)
		}
		if err == nil {
			_ = q.String()
			_ = q.Cmp(tiny) + q.Cmp(huge)
			_ = q.AsDec().String()
		}
		// JSON holds s with invalid UTF-8 replaced.
		doc, _ := json.Marshal(map[string]string{"q": s})
		var back map[string]string
		if err := json.Unmarshal(doc, &back); err != nil {
			t.Fatal(err)
		}
		checkErr = safequantity.Check(back["q"])
		if found := len(safequantity.CheckJSON(doc, []string{"q"})) > 0; found != (checkErr != nil) {
			t.Fatalf("CheckJSON found a problem: %v; Check: %v", found, checkErr)
		}
	})
}
