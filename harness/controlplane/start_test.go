package controlplane

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
)

// TestStartNeedsABinaryDir: without a directory of binaries Start says
// how to get one.
func TestStartNeedsABinaryDir(t *testing.T) {
	_, err := Start(Options{})
	if err == nil || !strings.Contains(err.Error(), "kubeharness bins use VERSION -p PATH") {
		t.Errorf("Start without BinaryDir: %v", err)
	}
}

// TestCheckedBinariesAreTheStores: the binaries CheckBinaryDir checks are
// those a store holds for a control plane (binaries.ControlPlaneNames).
func TestCheckedBinariesAreTheStores(t *testing.T) {
	got, want := slices.Sorted(slices.Values(checkedBinaries)), slices.Sorted(slices.Values(binaries.ControlPlaneNames()))
	if !slices.Equal(got, want) {
		t.Errorf("checked %v, the store's control-plane binaries %v", got, want)
	}
}
