package testbins

import (
	"os"
	"testing"
)

// Need returns the directory of the control-plane binaries a test starts
// a control plane from, $KUBEBUILDER_ASSETS or Default's, and the
// repository's root when known (empty with $KUBEBUILDER_ASSETS); without
// binaries it skips the test, saying how to provide them.
func Need(t testing.TB) (dir, root string) {
	t.Helper()
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, ""
	}
	dir, root, _, err := Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	return dir, root
}
