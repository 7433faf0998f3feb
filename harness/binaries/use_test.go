package binaries

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

func TestUseInstalledOnlyBuildsNothing(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	_, _, err := st.Use(context.Background(), versions.Exactly(versions.MustParse("1.37.1")), UseOptions{InstalledOnly: true})
	if err == nil || !strings.Contains(err.Error(), "drop -i to download or build it") {
		t.Fatalf("got %v, want a store-only miss that says how to get the binaries", err)
	}
	if got, _ := filepath.Glob(filepath.Join(st.Dir, "k8s", "*")); len(got) != 0 {
		t.Errorf("installed-only use wrote %v", got)
	}
}

func TestUseTakesMatchingAssetsFromTheEnvironment(t *testing.T) {
	dir, _, version, err := FindDefault()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	t.Setenv(AssetsEnv, dir)
	var out strings.Builder
	st := Store{Dir: t.TempDir(), Out: &out}
	got, v, err := st.Use(context.Background(), versions.Exactly(version), UseOptions{Components: DefaultComponents, UseEnv: true})
	if err != nil || got != dir || v != version {
		t.Fatalf("got %s %s %v, want $%s (%s) holding %s", got, v, err, AssetsEnv, dir, version)
	}
	if !strings.Contains(out.String(), "using $"+AssetsEnv) {
		t.Errorf("Use did not say it took $%s: %q", AssetsEnv, out.String())
	}
}
