package versions

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Version
	}{
		{"1.37.1", New(1, 37, 1)},
		{"v1.37.1", New(1, 37, 1)},
		{" 3.7.3 ", New(3, 7, 3)},
		{"1.37.10", New(1, 37, 10)},
		{"0.37.1", New(0, 37, 1)},
		{"10.200.30", New(10, 200, 30)},
	} {
		got, err := Parse(tc.text)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.text, got, err, tc.want)
		}
	}
	for text, wantErr := range map[string]string{
		"1.37":        "1.37 names a minor, not a release: write one of its patches, such as 1.37.0",
		"1.37.x":      "names a minor",
		"1.37.1-rc.0": "1.37.1-rc.0 is a pre-release: write a release, such as 1.37.1",
		"":            `"" is not a release`,
		"latest":      `"latest" is not a release`,
		"1.037.1":     "not a release",
		"0.0.0":       "not a release",
	} {
		if v, err := Parse(text); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, %v; want an error containing %q", text, v, err, wantErr)
		}
	}
}

func TestVersionOrderAndText(t *testing.T) {
	vs := []Version{MustParse("1.9.0"), MustParse("1.37.1"), MustParse("1.10.2"), MustParse("1.37.0")}
	slices.SortFunc(vs, Version.Compare)
	want := []Version{MustParse("1.9.0"), MustParse("1.10.2"), MustParse("1.37.0"), MustParse("1.37.1")}
	if !slices.Equal(vs, want) {
		t.Errorf("sorted: %v, want %v", vs, want)
	}
	if !MustParse("1.37.0").Less(MustParse("1.37.1")) || MustParse("1.37.1").Less(MustParse("1.37.1")) {
		t.Error("Less is not older-than")
	}
	v := MustParse("v1.37.1")
	if v.String() != "1.37.1" || v.Major() != 1 || v.Minor() != 37 || v.Patch() != 1 {
		t.Errorf("%v: %d %d %d", v, v.Major(), v.Minor(), v.Patch())
	}
	if (Version{}).String() != "" || !(Version{}).IsZero() {
		t.Error("the zero Version must print as nothing")
	}
}

func TestVersionJSON(t *testing.T) {
	type doc struct {
		V    Version `json:"v"`
		None Version `json:"none,omitzero"`
	}
	out, err := json.Marshal(doc{V: MustParse("1.37.1")})
	if err != nil || string(out) != `{"v":"1.37.1"}` {
		t.Fatalf("Marshal = %s, %v", out, err)
	}
	var got doc
	if err := json.Unmarshal([]byte(`{"v":"v1.36.4"}`), &got); err != nil || got.V != MustParse("1.36.4") {
		t.Fatalf("Unmarshal = %+v, %v", got, err)
	}
	if err := json.Unmarshal([]byte(`{"v":"1.36"}`), &got); err == nil || !strings.Contains(err.Error(), "names a minor") {
		t.Fatalf("Unmarshal of a minor: %v", err)
	}
}
