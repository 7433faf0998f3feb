package clihint

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build information", nil, false, "latest"},
		{"a dependency at a tag", &debug.BuildInfo{Deps: []*debug.Module{{Path: "other", Version: "v1.0.0"}, {Path: module, Version: "v0.4.1"}}}, true, "v0.4.1"},
		{"the main module, installed", &debug.BuildInfo{Main: debug.Module{Path: module, Version: "v0.4.1"}}, true, "v0.4.1"},
		{"the main module in its checkout", &debug.BuildInfo{Main: debug.Module{Path: module, Version: "(devel)"}}, true, "latest"},
		{"replaced by a directory", &debug.BuildInfo{Deps: []*debug.Module{{Path: module, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "../harness"}}}}, true, "latest"},
		{"replaced by a fork's version", &debug.BuildInfo{Deps: []*debug.Module{{Path: module, Version: "v0.4.1", Replace: &debug.Module{Path: "example.com/fork/harness", Version: "v0.4.2"}}}}, true, "latest"},
		{"not in the build", &debug.BuildInfo{Deps: []*debug.Module{{Path: "other", Version: "v1.0.0"}}}, true, "latest"},
	} {
		if got := versionIn(tc.info, tc.ok); got != tc.want {
			t.Errorf("%s: versionIn = %q, want %q", tc.name, got, tc.want)
		}
	}
	if g := Get(); !strings.Contains(g, "go install "+Path+"@") || !strings.Contains(g, "go tool kubeharness") {
		t.Errorf("Get() = %q: it must say how to install and how to run it as a tool", g)
	}
}
