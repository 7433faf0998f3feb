package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster is a running API server and the clients a suite talks to it with.
type Cluster struct {
	// Provider names where the cluster came from: "envtest", "kind",
	// "existing", or a name of the suite's own.
	Provider string
	// Config authenticates as the cluster's admin.
	Config    *rest.Config
	Client    client.Client
	Clientset kubernetes.Interface
	// Version is what the API server reports.
	Version *version.Info
	// Abilities are what the provider offers beyond the API server, as
	// values of types the suite defines (the nodes being kind's
	// containers, a control plane the suite may restart, …). A spec asks
	// for one with Ability, never by the provider's name: a new provider
	// that offers the same ability runs the same specs.
	Abilities []any
}

// Ability returns the ability of type A that c offers (a value in
// c.Abilities that is an A: a struct type, or an interface a value
// implements), and whether it offers one.
func Ability[A any](c *Cluster) (A, bool) {
	var zero A
	if c == nil {
		return zero, false
	}
	for _, v := range c.Abilities {
		if a, ok := v.(A); ok {
			return a, true
		}
	}
	return zero, false
}

// Connect makes the clients of cfg, with scheme (nil: client-go's
// built-in types) for Client, and asks the API server its version.
func Connect(ctx context.Context, provider string, cfg *rest.Config, scheme *runtime.Scheme) (*Cluster, error) {
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("asking the API server at %s its version: %w", cfg.Host, err)
	}
	return &Cluster{Provider: provider, Config: cfg, Client: c, Clientset: cs, Version: info}, nil
}

// Provider brings a Cluster up and tears it down.
type Provider interface {
	// Name is the provider's name, as Cluster.Provider carries it.
	Name() string
	// Start brings the cluster up (or connects to it) and returns once its
	// API server answers.
	Start(ctx context.Context) (*Cluster, error)
	// Stop tears down what Start brought up; a cluster the provider did
	// not make is left as it was.
	Stop(ctx context.Context) error
}

// LogExporter is a Provider that can write its cluster's own logs (nodes,
// kubelets, container runtimes, every Pod's) below dir, for a failed run.
type LogExporter interface {
	ExportLogs(dir string) error
}

// ImageLoader is a Provider whose nodes can be given container images
// without a registry.
type ImageLoader interface {
	LoadImages(ctx context.Context, images ...string) error
}
