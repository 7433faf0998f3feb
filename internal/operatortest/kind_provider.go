package operatortest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/kind"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/scheme"
)

// KeepEnv, when "1" or "true", keeps a kind cluster the suite created.
const KeepEnv = "KIND_KEEP"

// KindCoverageEnv names a directory (make e2e PROVIDER=kind COVER=1 sets
// it): the provider then deploys a manager built with -cover
// (deploy.CoverageConfig) and, before its Stop tears the cluster down,
// stops it and copies its coverage counters there, a directory per Pod.
const KindCoverageEnv = "KUBEHARNESS_KIND_COVERAGE"

// KindProvider runs the suite on a kind cluster made from kind-config.yaml:
// it creates the cluster unless it exists, builds and loads the manager
// image, deploys config/default, and waits for the rollout and for the
// webhooks to admit a dry-run canary. A cluster it created is deleted at
// the end unless KIND_KEEP=1; one that existed is left as it was found.
type KindProvider struct {
	Root string
	// Version is what $K8S_VERSION asks for, as for EnvtestProvider.
	Version versions.Selector
	Out     io.Writer

	base *kind.Provider
	stop context.CancelFunc
	// coverage is $KUBEHARNESS_KIND_COVERAGE, and cfg the cluster's REST
	// config to collect it with.
	coverage string
	cfg      *rest.Config
}

var (
	_ cluster.Provider    = &KindProvider{}
	_ cluster.LogExporter = &KindProvider{}
)

// Name implements Provider.
func (p *KindProvider) Name() string { return "kind" }

func (p *KindProvider) out() io.Writer {
	if p.Out == nil {
		return os.Stderr
	}
	return p.Out
}

// Offers lists the abilities every cluster of this provider has, as zero
// values (ProviderOffers).
func (*KindProvider) Offers() []any { return []any{&Operator{}, RealNodes{}, KindNodes{}} }

// Start implements Provider.
func (p *KindProvider) Start(ctx context.Context) (*cluster.Cluster, error) {
	kc := NewKindCluster(p.Root, p.out())
	images, err := kindNodeImagesUnlessExists(ctx, kc, p.Root, p.Version, p.out())
	if err != nil {
		return nil, err
	}
	keep := os.Getenv(KeepEnv)
	p.base = &kind.Provider{Cluster: kc, Images: images, Scheme: scheme.New(), Keep: keep == "1" || keep == "true"}
	if _, err := p.base.Start(ctx); err != nil {
		return nil, err
	}
	p.coverage = os.Getenv(KindCoverageEnv)
	cfg, err := deploy.ToKindWith(ctx, kc, p.Root, p.out(), deploy.KindOptions{Coverage: p.coverage != ""})
	if err != nil {
		return nil, err
	}
	p.cfg = cfg
	cl, stop, err := connectDeployed(ctx, p.Name(), cfg)
	p.stop = stop
	if cl != nil {
		cl.Abilities = append(cl.Abilities, KindNodes{Name: kc.Name})
	}
	return cl, err
}

// Stop implements Provider: a cluster Start created is deleted unless
// $KIND_KEEP is 1; one it found is left as it was. With
// $KUBEHARNESS_KIND_COVERAGE, the deployed manager's coverage is collected
// first (deploy.CollectKindCoverage), and the manager scaled back up on a
// cluster that stays.
func (p *KindProvider) Stop(ctx context.Context) error {
	var covErr error
	if p.coverage != "" && p.cfg != nil {
		covErr = p.collectCoverage(ctx)
	}
	if p.stop != nil {
		p.stop()
	}
	if p.base == nil {
		return covErr
	}
	return errors.Join(covErr, p.base.Stop(ctx))
}

func (p *KindProvider) collectCoverage(ctx context.Context) error {
	c, err := client.New(p.cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("collecting the deployed manager's coverage: %w", err)
	}
	stays := p.base == nil || !p.base.Created() || p.base.Keep
	if err := deploy.CollectKindCoverage(ctx, c, p.coverage, stays, p.out()); err != nil {
		return fmt.Errorf("collecting the deployed manager's coverage: %w", err)
	}
	return nil
}

// ExportLogs implements cluster.LogExporter: it writes kind's logs of
// every node below dir.
func (p *KindProvider) ExportLogs(dir string) error {
	if p.base == nil {
		return errors.New("no kind cluster")
	}
	return p.base.ExportLogs(dir)
}
