package cluster

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubeharness/kubeharness/harness/controlplane"
)

// Envtest is a control plane of the suite's own (harness/controlplane: the
// tuned start by default), with the CRDs of CRDDirectoryPaths installed and
// the disposable marker set. It can restart and kill its components
// (ComponentRestarter).
type Envtest struct {
	// Options configure the control plane: the directory of its binaries
	// (required), kube-controller-manager's controllers, output.
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
	cp, err := controlplane.Start(e.Options)
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
