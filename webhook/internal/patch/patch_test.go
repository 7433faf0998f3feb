package patch

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

func TestEscapePointer(t *testing.T) {
	for in, want := range map[string]string{
		"cpu":                 "cpu",
		"kubeharness.dev/a~b": "kubeharness.dev~1a~0b",
		"~1":                  "~01",
		"":                    "",
	} {
		if got := EscapePointer(in); got != want {
			t.Errorf("EscapePointer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMembers(t *testing.T) {
	for _, raw := range []string{"", " null ", "null"} {
		if m, err := Members(json.RawMessage(raw)); m != nil || err != nil {
			t.Errorf("Members(%q) = %v, %v; want nil, nil", raw, m, err)
		}
	}
	if m, err := Members(json.RawMessage(`{"a":1,"b":null}`)); err != nil || len(m) != 2 || !IsNull(m["b"]) || IsNull(m["a"]) {
		t.Errorf("Members of an object = %v, %v", m, err)
	}
	if _, err := Members(json.RawMessage(`[1]`)); err == nil {
		t.Error("Members of an array: no error")
	}
}

// TestAddAnnotations applies the operations as the API server would: the
// annotations are set and everything else, known or not, is kept.
func TestAddAnnotations(t *testing.T) {
	add := map[string]string{"x.kubeharness.dev/a": "1", "b/c~d": "2"}
	for _, tc := range []struct{ name, in, want string }{
		{"no metadata", `{"kind":"Node"}`, `{"kind":"Node","metadata":{"annotations":{"x.kubeharness.dev/a":"1","b/c~d":"2"}}}`},
		{"null metadata", `{"metadata":null}`, `{"metadata":{"annotations":{"x.kubeharness.dev/a":"1","b/c~d":"2"}}}`},
		{"no annotations", `{"metadata":{"name":"n","future":7}}`, `{"metadata":{"name":"n","future":7,"annotations":{"x.kubeharness.dev/a":"1","b/c~d":"2"}}}`},
		{"null annotations", `{"metadata":{"annotations":null}}`, `{"metadata":{"annotations":{"x.kubeharness.dev/a":"1","b/c~d":"2"}}}`},
		{"annotations", `{"metadata":{"annotations":{"keep":"k","b/c~d":"old"}}}`, `{"metadata":{"annotations":{"keep":"k","x.kubeharness.dev/a":"1","b/c~d":"2"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.in), &obj); err != nil {
				t.Fatal(err)
			}
			ops, err := json.Marshal(AddAnnotations(obj, add))
			if err != nil {
				t.Fatal(err)
			}
			p, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				t.Fatalf("%s: %v", ops, err)
			}
			got, err := p.Apply([]byte(tc.in))
			if err != nil {
				t.Fatalf("applying %s: %v", ops, err)
			}
			if !jsonpatch.Equal(got, []byte(tc.want)) {
				t.Errorf("patch %s made %s, want %s", ops, got, tc.want)
			}
		})
	}
	if ops := AddAnnotations(map[string]json.RawMessage{}, nil); ops != nil {
		t.Errorf("no annotations: %v, want none", ops)
	}
}

func TestReplace(t *testing.T) {
	ops, err := json.Marshal([]Op{Replace("/status/allocatable/cpu", "8")})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"op":"replace","path":"/status/allocatable/cpu","value":"8"}]`; string(ops) != want {
		t.Errorf("got %s, want %s", ops, want)
	}
}
