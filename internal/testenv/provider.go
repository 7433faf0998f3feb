package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm"
)

// Provider brings up a cluster with kubeharness running against it. It is
// harness/cluster's Provider with this operator deployed; a provider that
// exports its cluster's logs is a cluster.LogExporter.
type Provider interface {
	// Name is what PROVIDER selects: "envtest", "kind" or "existing".
	Name() string
	// Start brings the cluster up and returns once the manager's webhooks
	// admit requests through the API server.
	Start(ctx context.Context) (*Cluster, error)
	// Stop tears down what Start brought up.
	Stop(ctx context.Context) error
}

// Cluster is what specs talk to: the harness's cluster.Cluster (the API
// server and its clients) and the facts of this operator's deployment on it
// that specs need.
type Cluster struct {
	*cluster.Cluster
	// Deployment is where the manager runs and how the suite reaches it.
	Deployment
	// CertOptions are the manager's certificate settings.
	CertOptions certs.Options
	// FakeVMs steers the fake driver of the VirtualMachine controller the
	// harness runs (envtest with the fake driver); nil elsewhere.
	FakeVMs vmfixture.FakeVMs
	// VMOptions are the VirtualMachine controller's settings.
	VMOptions vm.Options
}

// Deployment is where this operator runs in a cluster and how the suite
// reaches it: facts that cross to parallel Ginkgo processes as they are
// (Share), so a new one is a field here and nothing more.
type Deployment struct {
	// ManagerLogFile is the manager's JSON log, where the manager runs on
	// the harness's machine (read a spec's part with harness/bundle.LogWindow).
	ManagerLogFile string `json:"managerLogFile,omitempty"`
	// WebhookAddr is where the API server reaches the webhook server
	// (host:port), when the harness can dial it too.
	WebhookAddr string `json:"webhookAddr,omitempty"`
	// WebhookServerName is the name the webhook server's certificate is
	// checked against; empty means WebhookAddr's host.
	WebhookServerName string `json:"webhookServerName,omitempty"`
	// MetricsAddr is the manager's HTTPS metrics address (host:port), when
	// the harness can reach it.
	MetricsAddr string `json:"metricsAddr,omitempty"`
	// ProbeAddr is the manager's health probe address (host:port), when the
	// harness can reach it.
	ProbeAddr string `json:"probeAddr,omitempty"`
	// VMDriver names the VirtualMachine controller's driver (fake or
	// docker); empty where no VirtualMachine controller runs.
	VMDriver string `json:"vmDriver,omitempty"`
}

// ProviderEnv selects the provider; empty means envtest.
const ProviderEnv = "PROVIDER"

// NewProvider returns the provider named by $PROVIDER.
func NewProvider(root, artifacts string) (Provider, error) {
	switch name := os.Getenv(ProviderEnv); name {
	case "", "envtest":
		sel, err := versionFromEnv(root)
		if err != nil {
			return nil, err
		}
		return &EnvtestProvider{Root: root, Artifacts: artifacts, Version: sel}, nil
	case "kind":
		sel, err := versionFromEnv(root)
		if err != nil {
			return nil, err
		}
		return &KindProvider{Root: root, Version: sel}, nil
	case "existing":
		return &ExistingProvider{}, nil
	default:
		return nil, fmt.Errorf("%s=%q is not a provider: use envtest (the default), kind or existing", ProviderEnv, name)
	}
}

// versionFromEnv is what $K8S_VERSION asks for; a request that is no
// version is an error that lists the versions versions.yaml below root pins.
func versionFromEnv(root string) (versions.Selector, error) {
	sel, err := versions.FromEnv()
	if err != nil {
		if lock, lockErr := versions.LoadLockfile(root); lockErr == nil {
			err = lock.Explain(err)
		}
		return versions.Selector{}, err
	}
	return sel, nil
}

// ArtifactsDir is where reports and failure bundles go: $ARTIFACTS, or
// artifacts/ at the repository root.
func ArtifactsDir(root string) string {
	if d := os.Getenv("ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(root, "artifacts")
}
