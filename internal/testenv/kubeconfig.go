package testenv

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadKubeconfig loads the REST config of a kubeconfig context, as kubectl
// would: path, else $KUBECONFIG, else ~/.kube/config; kubeContext, else the
// current context. It also returns a description of where that is, for
// messages.
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
