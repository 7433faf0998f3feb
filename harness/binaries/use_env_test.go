package binaries_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
	"github.com/kubeharness/kubeharness/harness/versions"
)

func TestUseTakesMatchingAssetsFromTheEnvironment(t *testing.T) {
	dir, _, version, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	t.Setenv(binaries.AssetsEnv, dir)
	var out strings.Builder
	st := binaries.Store{Dir: t.TempDir(), Out: &out}
	got, v, err := st.Use(context.Background(), versions.Exactly(version), binaries.UseOptions{Components: binaries.DefaultComponents, UseEnv: true})
	if err != nil || got != dir || v != version {
		t.Fatalf("got %s %s %v, want $%s (%s) holding %s", got, v, err, binaries.AssetsEnv, dir, version)
	}
	if !strings.Contains(out.String(), "using $"+binaries.AssetsEnv) {
		t.Errorf("Use did not say it took $%s: %q", binaries.AssetsEnv, out.String())
	}
}
