package operatortest

import (
	"context"
	"os"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/scheme"
)

// ExistingProvider runs the suite on the cluster of the current kubeconfig
// context ($KUBECONFIG, --context through $KUBECONTEXT), where kubeharness
// is already deployed (make kind-up, make deploy). It refuses a cluster
// that does not carry the disposable marker: the suite creates and deletes
// namespaces, nodes' statuses and CSRs, and must never run against a
// cluster someone depends on.
type ExistingProvider struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config.
	Kubeconfig string
	stop       context.CancelFunc
}

var _ cluster.Provider = &ExistingProvider{}

// Name implements Provider.
func (*ExistingProvider) Name() string { return "existing" }

// Offers lists the abilities every cluster of this provider has, as zero
// values (ProviderOffers).
func (*ExistingProvider) Offers() []any { return []any{&Operator{}, RealNodes{}} }

// Start implements Provider.
func (p *ExistingProvider) Start(ctx context.Context) (*cluster.Cluster, error) {
	base, err := (&cluster.Existing{Kubeconfig: p.Kubeconfig, Context: os.Getenv("KUBECONTEXT"), Scheme: scheme.New()}).Start(ctx)
	if err != nil {
		return nil, err
	}
	cl, stop, err := connectDeployed(ctx, p.Name(), base.Config)
	p.stop = stop
	return cl, err
}

// Stop implements Provider: the cluster is not the suite's to remove.
func (p *ExistingProvider) Stop(context.Context) error {
	if p.stop != nil {
		p.stop()
	}
	return nil
}
