package operatortest

import (
	"testing"

	"k8s.io/apimachinery/pkg/version"
)

func TestSupportsDeleteValidation(t *testing.T) {
	cases := []struct {
		name string
		info *version.Info
		want bool
	}{
		{name: "1.14 lacks oldObject", info: &version.Info{GitVersion: "v1.14.10", Major: "1", Minor: "14"}, want: false},
		{name: "1.15.0 is the first", info: &version.Info{GitVersion: "v1.15.0", Major: "1", Minor: "15"}, want: true},
		{name: "current", info: &version.Info{GitVersion: "v1.37.1", Major: "1", Minor: "37"}, want: true},
		{name: "vendor suffix", info: &version.Info{GitVersion: "v1.15.3-gke.1", Major: "1", Minor: "15+"}, want: true},
		{name: "vendor 1.14", info: &version.Info{GitVersion: "v1.14.9-eks-1", Major: "1", Minor: "14+"}, want: false},
		{name: "unstamped build falls back to major/minor", info: &version.Info{GitVersion: "", Major: "1", Minor: "16+"}, want: true},
		{name: "unstamped build with nothing to go on", info: &version.Info{GitVersion: "v0.0.0-master+$Format:%H$", Major: "", Minor: ""}, want: false},
		{name: "no answer", info: nil, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := SupportsDeleteValidation(tc.info)
			if got != tc.want {
				t.Fatalf("SupportsDeleteValidation(%+v) = %v (%s), want %v", tc.info, got, why, tc.want)
			}
			if !got && why == "" {
				t.Fatalf("a refusal must say why")
			}
		})
	}
}
