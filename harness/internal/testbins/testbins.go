// Package testbins finds the control-plane binaries the harness's own
// tests start control planes from: those of versions.yaml's default
// version in the store of the repository the harness is developed in
// (bin/k8s), or $KUBEBUILDER_ASSETS.
package testbins

import (
	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Default returns the directory of the binaries (binaries.Find), the
// repository's root and the version: versions.yaml's default in the
// project above the working directory (binaries.ProjectRoot).
func Default() (dir, root string, v versions.Version, err error) {
	if root, err = binaries.ProjectRoot(); err != nil {
		return "", "", versions.Version{}, err
	}
	lock, err := versions.LoadLockfile(root)
	if err != nil {
		return "", "", versions.Version{}, err
	}
	dir, err = binaries.Find(root, lock.Default)
	return dir, root, lock.Default, err
}
