package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
)

// Envtest is a control plane of the suite's own (harness/controlplane: the
// tuned start by default), with the CRDs of CRDDirectoryPaths installed and
// the disposable marker set. It can restart and kill its components
// (ComponentRestarter).
type Envtest struct {
	// Options configure the control plane: the directory of its binaries,
	// kube-controller-manager's controllers, output. Without a directory
	// of binaries Start finds them with binaries.Lookup, the one lookup
	// (KUBEBUILDER_ASSETS and the rest of controller-runtime's order, then
	// the store `kubeharness bins use` fills).
	Options controlplane.Options
	// CRDDirectoryPaths are directories (or files) of CRDs to install and
	// wait for, as controller-runtime's envtest installs them.
	CRDDirectoryPaths []string
	// Scheme is the scheme of Cluster.Client (nil: client-go's types).
	Scheme *runtime.Scheme
	// MarkedBy is who the disposable marker names as the cluster's maker
	// (MarkDisposable); empty means "harness/cluster Envtest".
	MarkedBy string

	cp *controlplane.ControlPlane
}

var (
	_ Provider           = &Envtest{}
	_ ComponentRestarter = &Envtest{}
)

// ComponentRestarter is a Provider that can kill a component of its
// control plane, as a crash would, and restart it.
type ComponentRestarter interface {
	Kill(comp controlplane.Component) error
	Restart(ctx context.Context, comp controlplane.Component) error
}

// Name implements Provider.
func (*Envtest) Name() string { return "envtest" }

// Start implements Provider.
func (e *Envtest) Start(ctx context.Context) (*Cluster, error) {
	if e.cp != nil {
		return nil, errors.New("this envtest provider runs a control plane already: Stop it first")
	}
	o := e.Options
	if o.BinaryDir == "" {
		dir, err := findBinaries(ctx, len(o.Controllers) > 0)
		if err != nil {
			return nil, err
		}
		o.BinaryDir = dir
	}
	cp, err := controlplane.Start(o)
	if err != nil {
		return nil, err
	}
	c, err := e.connect(ctx, cp)
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	e.cp = cp
	return c, nil
}

// findBinaries is the one directory binaries.Lookup finds etcd and
// kube-apiserver in, and kube-controller-manager with controllers.
func findBinaries(ctx context.Context, controllers bool) (string, error) {
	components := binaries.DefaultComponents
	if controllers {
		components = append(slices.Clone(components), binaries.KubeControllerManager)
	}
	found, err := binaries.Lookup(ctx, binaries.Where{Components: components})
	if err != nil {
		return "", err
	}
	if found.Dir == "" {
		return "", fmt.Errorf("the control-plane binaries were found in several directories (%v): set Options.BinaryDir to one that holds them all", found.Paths)
	}
	return found.Dir, nil
}

func (e *Envtest) connect(ctx context.Context, cp *controlplane.ControlPlane) (*Cluster, error) {
	if len(e.CRDDirectoryPaths) > 0 {
		if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: e.CRDDirectoryPaths, ErrorIfPathMissing: true}); err != nil {
			return nil, fmt.Errorf("installing the CRDs of %v: %w", e.CRDDirectoryPaths, err)
		}
	}
	c, err := Connect(ctx, e.Name(), cp.Config, e.Scheme)
	if err != nil {
		return nil, err
	}
	by := e.MarkedBy
	if by == "" {
		by = "harness/cluster Envtest"
	}
	if err := MarkDisposable(ctx, c.Client, by); err != nil {
		return nil, err
	}
	return c, nil
}

// Running is the running control plane; nil before Start.
func (e *Envtest) Running() *controlplane.ControlPlane { return e.cp }

// Kill implements ComponentRestarter.
func (e *Envtest) Kill(comp controlplane.Component) error {
	if e.cp == nil {
		return errors.New("no control plane runs: Start first")
	}
	return e.cp.Kill(comp)
}

// Restart implements ComponentRestarter.
func (e *Envtest) Restart(ctx context.Context, comp controlplane.Component) error {
	if e.cp == nil {
		return errors.New("no control plane runs: Start first")
	}
	return e.cp.Restart(ctx, comp)
}

// Stop implements Provider: it stops the control plane and removes its data.
func (e *Envtest) Stop(context.Context) error {
	if e.cp == nil {
		return nil
	}
	err := e.cp.Stop()
	e.cp = nil
	return err
}
