package binaries

import (
	"context"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// The components, and how a binary is checked, are package component's;
// these names stay here for the callers that use them.
type (
	// Component is one control-plane binary and the Go module it is
	// built from (component.Component).
	Component = component.Component
	// Want is a component at the version a store directory wants it, as a
	// Source is asked for it (component.Want).
	Want = component.Want
)

var (
	// KubeAPIServer, KubeAPIServerTest, KubeControllerManager, Etcd and
	// Kubectl are the components the harness runs (component's).
	KubeAPIServer         = component.KubeAPIServer
	KubeAPIServerTest     = component.KubeAPIServerTest
	KubeControllerManager = component.KubeControllerManager
	Etcd                  = component.Etcd
	Kubectl               = component.Kubectl
	// DefaultComponents are what a control plane needs: etcd and
	// kube-apiserver.
	DefaultComponents = component.DefaultComponents
	// EnvtestComponents are the binaries an envtest asset directory
	// holds, the set `kubeharness bins use` installs: etcd,
	// kube-apiserver and kubectl.
	EnvtestComponents = component.EnvtestComponents
)

// BinaryVersion checks that path is a regular, non-empty, executable file
// that no one but its owner may write and that runs, and returns the
// version it reports (component.BinaryVersion).
func BinaryVersion(ctx context.Context, path string, c Component) (string, error) {
	return component.BinaryVersion(ctx, path, c)
}

// CheckBinaries checks every component in dir (component.CheckBinaries):
// that they pass the one trust rule of every binary the harness runs, work,
// and report one Kubernetes release, which it returns.
func CheckBinaries(ctx context.Context, dir string, components ...Component) (versions.Version, error) {
	return component.CheckBinaries(ctx, dir, components...)
}

// ControlPlaneNames are the binaries a control plane may run from its
// directory of binaries (component.ControlPlaneNames).
func ControlPlaneNames() []string { return component.ControlPlaneNames() }

// componentNames are the names of components.
func componentNames(components []Component) []string { return component.Names(components) }
