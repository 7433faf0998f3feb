package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Existing is the cluster of a kubeconfig context, refused unless it
// carries the disposable marker. Stop leaves it running.
type Existing struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config, as kubectl reads them.
	Kubeconfig string
	// Context is the kubeconfig context; empty means its current one.
	Context string
	// Scheme is the scheme of Cluster.Client (nil: client-go's types).
	Scheme *runtime.Scheme
}

var _ Provider = &Existing{}

// Name implements Provider.
func (*Existing) Name() string { return "existing" }

// Start implements Provider.
func (e *Existing) Start(ctx context.Context) (*Cluster, error) {
	cfg, where, err := LoadKubeconfig(e.Kubeconfig, e.Context)
	if err != nil {
		return nil, err
	}
	c, err := Connect(ctx, e.Name(), cfg, e.Scheme)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := CheckDisposable(ctx, c.Client); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return c, nil
}

// Stop implements Provider: the cluster is not the suite's to remove.
func (*Existing) Stop(context.Context) error { return nil }

// LoadKubeconfig loads the REST config of a kubeconfig context, as kubectl
// finds it (path empty: $KUBECONFIG, then ~/.kube/config; kubeContext
// empty: the current context), and says which context and server it is.
func LoadKubeconfig(path, kubeContext string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	if kubeContext == "" {
		raw, err := loader.RawConfig()
		if err != nil {
			return nil, "", err
		}
		kubeContext = raw.CurrentContext
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig context %q: %w", kubeContext, err)
	}
	return cfg, fmt.Sprintf("context %q (%s)", kubeContext, cfg.Host), nil
}
