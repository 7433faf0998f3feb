package operatortest

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/suite"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
)

// Parallel Ginkgo runs one provider, in the first process, and every
// process talks to the cluster it started: the first process calls
// ShareCluster, which writes the connection details (the admin's
// credentials among them), the operator and the abilities to a file only
// this user can read, and every other process builds its own cluster with
// SharedCluster from that file. Only
// harness/suite's handle to the file crosses Ginkgo's loopback endpoint
// (SynchronizedBeforeSuite passes the bytes on), never the credentials.

// sharedCluster is what crosses from the first process to the others.
type sharedCluster struct {
	Provider string `json:"provider"`
	// Kubeconfig connects as the first process's client does (harness/cluster's
	// Kubeconfig), the admin's credentials among them.
	Kubeconfig string `json:"kubeconfig"`
	// QPS and Burst are that client's rate limits, which a kubeconfig does
	// not hold.
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`

	Abilities []sharedAbility `json:"abilities,omitempty"`
	Operator  *sharedOperator `json:"operator,omitempty"`
}

// sharedOperator is the Operator ability as it crosses: whole, but for
// FakeVMs, an object of the first process, which becomes where that
// process serves it (vmfixture.ServeFakeVMs).
type sharedOperator struct {
	Operator
	FakeVMsURL   string `json:"fakeVMsURL,omitempty"`
	FakeVMsToken string `json:"fakeVMsToken,omitempty"`
}

// sharedFileName is the file Share writes in the directory it makes.
const sharedFileName = "cluster.json"

// ShareCluster writes what another process needs to reach c to a file
// (mode 0600) in a directory of its own (mode 0700) with harness/suite's
// ShareFile and returns ShareFile's handle to it; remove removes both.
// fakeURL and fakeToken, when set, are where vmfixture.ServeFakeVMs serves
// the operator's FakeVMs.
func ShareCluster(c *cluster.Cluster, fakeURL, fakeToken string) (shared string, remove func() error, err error) {
	data, err := encodeShared(c, fakeURL, fakeToken)
	if err != nil {
		return "", nil, err
	}
	return suite.ShareFile(sharedFileName, data)
}

// encodeShared serializes what another process needs to reach c.
func encodeShared(c *cluster.Cluster, fakeURL, fakeToken string) ([]byte, error) {
	cfg := c.Config
	if cfg.AuthProvider != nil {
		return nil, fmt.Errorf("the kubeconfig uses the auth provider %q, which cannot be passed to parallel Ginkgo processes: use a credential plugin (exec) or run with PROCS=1", cfg.AuthProvider.Name)
	}
	kubeconfig, err := cluster.Kubeconfig(cfg, "suite")
	if err != nil {
		return nil, fmt.Errorf("passing the cluster to parallel Ginkgo processes: %w", err)
	}
	s := sharedCluster{Provider: c.Provider, Kubeconfig: string(kubeconfig), QPS: cfg.QPS, Burst: cfg.Burst}
	var others []any
	for _, a := range c.Abilities {
		op, ok := a.(*Operator)
		if !ok {
			others = append(others, a)
			continue
		}
		s.Operator = &sharedOperator{Operator: *op, FakeVMsURL: fakeURL, FakeVMsToken: fakeToken}
	}
	if s.Abilities, err = encodeAbilities(others); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// readShared reads the file Share wrote, by the handle Share returned,
// after harness/suite's ReadShared checked that it is that file and that
// only this user can read it.
func readShared(shared string) (*sharedCluster, error) {
	data, err := suite.ReadShared(shared)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster Ginkgo's first process started: %w", err)
	}
	var s sharedCluster
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading the cluster Ginkgo's first process started: %w", err)
	}
	return &s, nil
}

// SharedCluster builds the cluster of another process from the file
// ShareCluster wrote, by the handle ShareCluster returned. The operator's
// FakeVMs, when the first process has one, steers it over loopback.
func SharedCluster(shared string) (*cluster.Cluster, error) {
	s, err := readShared(shared)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(s.Kubeconfig))
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig Ginkgo's first process shared: %w", err)
	}
	cfg.QPS, cfg.Burst = s.QPS, s.Burst
	base, err := cluster.Connect(context.Background(), s.Provider, cfg, scheme.New())
	if err != nil {
		return nil, err
	}
	if base.Abilities, err = decodeAbilities(s.Abilities); err != nil {
		return nil, err
	}
	if o := s.Operator; o != nil {
		op := &o.Operator
		if o.FakeVMsURL != "" {
			op.FakeVMs = vmfixture.RemoteFakeVMs(o.FakeVMsURL, o.FakeVMsToken)
		}
		base.Abilities = append(base.Abilities, op)
	}
	return base, nil
}
