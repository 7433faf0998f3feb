package versions

import (
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	cases := []struct {
		value string
		// canonical is Canonical(); exact whether it names a patch.
		canonical string
		exact     bool
		// matches and not are versions it does and does not match.
		matches, not []string
	}{
		{value: "", matches: []string{"1.37.1", "1.2.3"}},
		{value: "  ", matches: []string{"1.37.1"}},
		{value: "1.37.1", canonical: "1.37.1", exact: true, matches: []string{"1.37.1"}, not: []string{"1.37.0", "1.36.1"}},
		{value: "v1.37.1", canonical: "1.37.1", exact: true, matches: []string{"1.37.1"}},
		{value: "1.37", canonical: "1.37", matches: []string{"1.37.0", "1.37.9"}, not: []string{"1.36.9", "2.37.0"}},
		{value: "1.37.x", canonical: "1.37", matches: []string{"1.37.2"}},
		{value: "v1.37", canonical: "1.37", matches: []string{"1.37.2"}},
	}
	for _, tc := range cases {
		sel, err := ParseSelector(tc.value, SourceArg)
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tc.value, err)
			continue
		}
		if got := sel.Canonical(); got != tc.canonical {
			t.Errorf("ParseSelector(%q).Canonical() = %q, want %q", tc.value, got, tc.canonical)
		}
		if sel.Explicit() != (tc.canonical != "") {
			t.Errorf("ParseSelector(%q).Explicit() = %v", tc.value, sel.Explicit())
		}
		if _, exact := sel.Exact(); exact != tc.exact {
			t.Errorf("ParseSelector(%q).Exact() says %v, want %v", tc.value, exact, tc.exact)
		}
		for _, v := range tc.matches {
			if !sel.Matches(MustParse(v)) {
				t.Errorf("%q does not match %s", tc.value, v)
			}
		}
		for _, v := range tc.not {
			if sel.Matches(MustParse(v)) {
				t.Errorf("%q matches %s", tc.value, v)
			}
		}
	}
}

// TestSelectorNamesItsSource: messages name the request as it was given.
func TestSelectorNamesItsSource(t *testing.T) {
	for _, tc := range []struct {
		sel        Selector
		want, drop string
	}{
		{MustParseSelector(" v1.37 ", SourceEnv), "K8S_VERSION=v1.37", "unset K8S_VERSION"},
		{MustParseSelector("1.37.x", SourceFlag), "--version=1.37.x", "drop --version"},
		{MustParseSelector("1.37", SourceArg), "VERSION argument 1.37", "drop the VERSION argument"},
		{MustParseSelector("1.37.1", SourceDefault), "versions.yaml default 1.37.1", "ask for no version"},
		{Exactly(MustParse("1.37.1")), "version 1.37.1", "ask for no version"},
		{MinorOf(MustParse("1.37.1")), "version 1.37", "ask for no version"},
	} {
		if got := tc.sel.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		if got := tc.sel.Drop(); got != tc.drop {
			t.Errorf("%s: Drop() = %q, want %q", tc.sel, got, tc.drop)
		}
	}
}

func TestParseSelectorRefuses(t *testing.T) {
	for value, want := range map[string]string{
		"v1.37.1-rc.0": "K8S_VERSION=v1.37.1-rc.0 is a pre-release, and kubeharness builds Kubernetes releases only: ask for K8S_VERSION=1.37.1, or K8S_VERSION=1.37 for the newest 1.37 patch",
		"1.37.1+abc":   "K8S_VERSION=1.37.1+abc is a pre-release",
		"latest":       "K8S_VERSION=latest is not a Kubernetes version: write a patch such as 1.37.1 or a minor such as 1.37",
		"1.37.1.2":     "K8S_VERSION=1.37.1.2 is not a Kubernetes version",
		"1.037":        "K8S_VERSION=1.037 is not a Kubernetes version",
		"1":            "K8S_VERSION=1 is not a Kubernetes version",
		"0.0.0":        "K8S_VERSION=0.0.0 is not a Kubernetes version",
	} {
		sel, err := ParseSelector(value, SourceEnv)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSelector(%q) = %v, %v; want an error containing %q", value, sel, err, want)
		}
	}
}

func TestFromCommandLine(t *testing.T) {
	cases := []struct {
		name, env, flag, arg string
		want                 Selector
		wantErr              string
	}{
		{name: "nothing", want: Selector{from: SourceEnv}},
		{name: "environment", env: "1.36", want: MustParseSelector("1.36", SourceEnv)},
		{name: "flag over environment", env: "1.36", flag: "1.37", want: MustParseSelector("1.37", SourceFlag)},
		{name: "argument", env: "1.36", arg: "1.37", want: MustParseSelector("1.37", SourceArg)},
		{name: "flag and argument agree", flag: "v1.37", arg: "1.37.x", want: MustParseSelector("1.37.x", SourceArg)},
		{name: "flag and argument disagree", flag: "1.36", arg: "1.37", wantErr: "the VERSION argument 1.37 and --version 1.36 disagree"},
		{name: "a bad environment", env: "1.37-rc.0", wantErr: "K8S_VERSION=1.37-rc.0 is not a Kubernetes version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvVar, tc.env)
			got, err := FromCommandLine(tc.flag, tc.arg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FromCommandLine(%q, %q) = %+v, %v; want %+v", tc.flag, tc.arg, got, err, tc.want)
			}
		})
	}
}
