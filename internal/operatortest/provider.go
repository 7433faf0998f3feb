package operatortest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm"
)

// The suite's providers are harness/cluster Providers: each brings a
// cluster up with this repository's operator running on it, and offers the
// operator as an ability (cluster.Ability[*Operator], OperatorOf) beside
// the others of abilities.go. A provider that exports its cluster's logs is
// a cluster.LogExporter.

// Operator is this repository's operator as a provider runs it: where its
// manager runs and how the suite reaches it, and the settings specs need.
// It crosses to parallel Ginkgo processes whole, as JSON (ShareCluster),
// but for what is of the first process alone: functions and objects,
// tagged json:"-" where they are declared (the certificate canary, the
// VirtualMachine controller's rate limiter, FakeVMs), which the other
// processes do without, or have again in a form of their own (FakeVMs).
type Operator struct {
	// Deployment is where the manager runs and how the suite reaches it.
	Deployment
	// CertOptions are the manager's certificate settings.
	CertOptions certs.Options `json:"certOptions"`
	// FakeVMs steers the fake driver of the VirtualMachine controller the
	// harness runs (envtest with the fake driver); nil elsewhere. The other
	// processes steer it over loopback (vmfixture.RemoteFakeVMs).
	FakeVMs vmfixture.FakeVMs `json:"-"`
	// VMOptions are the VirtualMachine controller's settings.
	VMOptions vm.Options `json:"vmOptions"`
}

// OperatorOf returns the operator a provider of this suite runs on c, nil
// when c has none (a cluster no provider of this suite started).
func OperatorOf(c *cluster.Cluster) *Operator {
	op, _ := cluster.Ability[*Operator](c)
	return op
}

// Deployment is where this operator runs in a cluster and how the suite
// reaches it: facts that cross to parallel Ginkgo processes as they are
// (ShareCluster), so a new one is a field here and nothing more.
type Deployment struct {
	// ManagerLogFile is the manager's JSON log, where the manager runs on
	// the harness's machine (read a spec's part with harness/bundle.LogWindow).
	ManagerLogFile string `json:"managerLogFile,omitempty"`
	// VMControllerLogFile is the VirtualMachine controller's JSON log, where
	// the controller runs on the harness's machine.
	VMControllerLogFile string `json:"vmControllerLogFile,omitempty"`
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
func NewProvider(root, artifacts string) (cluster.Provider, error) {
	switch name := os.Getenv(ProviderEnv); name {
	case "", "envtest":
		sel, err := versionFromEnv(root)
		if err != nil {
			return nil, err
		}
		binaries, err := controllersFromEnv()
		if err != nil {
			return nil, err
		}
		return &EnvtestProvider{Root: root, Artifacts: artifacts, Version: sel, Binaries: binaries}, nil
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

// ProviderOffers reports whether the provider $PROVIDER selects always
// offers ability A, before any cluster exists: for what a Ginkgo tree
// decides while it is built (a Serial decorator). Once the cluster runs,
// ask it (cluster.Ability). A $PROVIDER that names no provider offers
// nothing; NewProvider says why.
func ProviderOffers[A any]() bool {
	var abilities []any
	switch os.Getenv(ProviderEnv) {
	case "", "envtest":
		abilities = (&EnvtestProvider{}).Offers()
	case "kind":
		abilities = (&KindProvider{}).Offers()
	case "existing":
		abilities = (&ExistingProvider{}).Offers()
	}
	_, ok := cluster.Ability[A](&cluster.Cluster{Abilities: abilities})
	return ok
}

// CheckOffers returns an error naming each ability p's Offers lists that
// c, the cluster p started, lacks: what ProviderOffers promised a Ginkgo
// tree before the start must hold after it.
func CheckOffers(p cluster.Provider, c *cluster.Cluster) error {
	o, ok := p.(interface{ Offers() []any })
	if !ok {
		return nil
	}
	var missing []string
	for _, want := range o.Offers() {
		if !slices.ContainsFunc(c.Abilities, func(a any) bool { return reflect.TypeOf(a) == reflect.TypeOf(want) }) {
			missing = append(missing, fmt.Sprintf("%T", want))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the %s provider offers %s but its cluster lacks it: add it in Start or take it out of Offers", p.Name(), strings.Join(missing, ", "))
	}
	return nil
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
