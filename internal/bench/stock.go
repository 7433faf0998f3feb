package bench

import (
	"io"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubeharness/kubeharness/harness/controlplane"
)

// stockStartTimeout and stockStopTimeout bound a stock start and stop,
// as controlplane.Start's default bounds a tuned one.
const (
	stockStartTimeout = 60 * time.Second
	stockStopTimeout  = 30 * time.Second
)

// startStock starts controller-runtime's envtest as it comes, for the
// comparison with the tuned start: its etcd and kube-apiserver with its
// own settings, from dir, which is checked first (controlplane.
// CheckBinaryDir) and whose binaries run, not those TEST_ASSET_* or
// KUBEBUILDER_ASSETS would name to controller-runtime. The environment
// returned holds its admin Config and is stopped with its Stop.
func startStock(dir string) (*envtest.Environment, error) {
	if err := controlplane.CheckBinaryDir(dir); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: stockStartTimeout,
		ControlPlaneStopTimeout:  stockStopTimeout,
	}
	// Their output is dropped, as a tuned start's is by default.
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(dir, "etcd"), Out: io.Discard, Err: io.Discard}
	env.ControlPlane.KubectlPath = filepath.Join(dir, "kubectl")
	api := env.ControlPlane.GetAPIServer()
	api.Path, api.Out, api.Err = filepath.Join(dir, "kube-apiserver"), io.Discard, io.Discard
	if _, err := env.Start(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return env, nil
}
