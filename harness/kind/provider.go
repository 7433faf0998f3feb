package kind

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/harness/cluster"
)

// Provider is a kind cluster as a cluster.Provider: Start creates Cluster
// with the node image Images picks, unless it exists, and returns it
// marked disposable; Stop deletes it if Start created it, unless Keep. It
// loads images into the nodes (cluster.ImageLoader) and exports their logs
// (cluster.LogExporter).
type Provider struct {
	Cluster *Cluster
	Images  NodeImages
	// Scheme is the scheme of cluster.Cluster's Client (nil: client-go's types).
	Scheme *runtime.Scheme
	// Keep leaves a cluster Start created in place at Stop.
	Keep bool
	// Kubeconfig is the file kind writes the cluster's context (kind-<name>)
	// to; empty means $KUBECONFIG, then ~/.kube/config, as `kind create
	// cluster` does.
	Kubeconfig string

	created bool
}

var (
	_ cluster.Provider    = &Provider{}
	_ cluster.ImageLoader = &Provider{}
	_ cluster.LogExporter = &Provider{}
)

// Name implements cluster.Provider.
func (*Provider) Name() string { return "kind" }

// Start implements cluster.Provider. The returned Cluster's Config reaches
// the cluster from this host.
func (p *Provider) Start(ctx context.Context) (*cluster.Cluster, error) {
	created, err := p.Cluster.Up(ctx, p.Images, p.Kubeconfig)
	if err != nil {
		return nil, err
	}
	p.created = p.created || created
	raw, err := p.Cluster.Kubeconfig()
	if err != nil {
		return nil, fmt.Errorf("kind cluster %q: reading its kubeconfig: %w", p.Cluster.Name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("kind cluster %q: %w", p.Cluster.Name, err)
	}
	c, err := cluster.Connect(ctx, p.Name(), cfg, p.Scheme)
	if err != nil {
		return nil, err
	}
	if err := cluster.MarkDisposable(ctx, c.Client, "harness/kind"); err != nil {
		return nil, err
	}
	return c, nil
}

// Created reports whether Start created the cluster (rather than found it).
func (p *Provider) Created() bool { return p.created }

// Stop implements cluster.Provider.
func (p *Provider) Stop(context.Context) error {
	if !p.created {
		return nil
	}
	if p.Keep {
		fmt.Fprintf(p.Cluster.out(), "keeping kind cluster %q (kind delete cluster --name %s deletes it)\n", p.Cluster.Name, p.Cluster.Name)
		return nil
	}
	p.created = false
	return p.Cluster.Delete(p.Kubeconfig)
}

// LoadImages implements cluster.ImageLoader.
func (p *Provider) LoadImages(ctx context.Context, images ...string) error {
	return p.Cluster.LoadImages(ctx, images...)
}

// ExportLogs implements cluster.LogExporter.
func (p *Provider) ExportLogs(dir string) error { return p.Cluster.ExportLogs(dir) }
