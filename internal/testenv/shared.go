package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/suite"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm"
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
	Provider string       `json:"provider"`
	REST     sharedConfig `json:"rest"`

	Abilities []sharedAbility `json:"abilities,omitempty"`
	Operator  *sharedOperator `json:"operator,omitempty"`
}

// sharedOperator is the Operator ability as it crosses: its FakeVMs, an
// object of the first process, becomes where that process serves it.
type sharedOperator struct {
	Deployment Deployment `json:"deployment"`

	Certs sharedCerts `json:"certs"`

	VMDefaultImage string        `json:"vmDefaultImage,omitempty"`
	VMUsageRefresh time.Duration `json:"vmUsageRefresh,omitempty"`
	VMFailedRetry  time.Duration `json:"vmFailedRetry,omitempty"`
	FakeVMsURL     string        `json:"fakeVMsURL,omitempty"`
	FakeVMsToken   string        `json:"fakeVMsToken,omitempty"`
}

// sharedCerts are the manager's certificate settings without the canary,
// which is a function of the first process.
type sharedCerts struct {
	Namespace      string        `json:"namespace"`
	ServiceName    string        `json:"serviceName"`
	ExtraDNSNames  []string      `json:"extraDNSNames,omitempty"`
	ExtraIPs       []net.IP      `json:"extraIPs,omitempty"`
	CertDuration   time.Duration `json:"certDuration"`
	CADuration     time.Duration `json:"caDuration"`
	RotationSettle time.Duration `json:"rotationSettle"`
}

// sharedConfig is the part of a rest.Config that can cross a process
// boundary: where the API server is and who the suite is to it.
type sharedConfig struct {
	Host            string                   `json:"host"`
	TLS             rest.TLSClientConfig     `json:"tls"`
	BearerToken     string                   `json:"bearerToken,omitempty"`
	BearerTokenFile string                   `json:"bearerTokenFile,omitempty"`
	Username        string                   `json:"username,omitempty"`
	Password        string                   `json:"password,omitempty"`
	Impersonate     rest.ImpersonationConfig `json:"impersonate"`
	QPS             float32                  `json:"qps,omitempty"`
	Burst           int                      `json:"burst,omitempty"`
	// Exec is a client-go credential plugin (existing clusters).
	Exec json.RawMessage `json:"exec,omitempty"`
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
	s := sharedCluster{
		Provider: c.Provider,
		REST: sharedConfig{
			Host: cfg.Host, TLS: cfg.TLSClientConfig, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile,
			Username: cfg.Username, Password: cfg.Password, Impersonate: cfg.Impersonate, QPS: cfg.QPS, Burst: cfg.Burst,
		},
	}
	var others []any
	for _, a := range c.Abilities {
		op, ok := a.(*Operator)
		if !ok {
			others = append(others, a)
			continue
		}
		s.Operator = &sharedOperator{
			Deployment: op.Deployment,
			Certs: sharedCerts{
				Namespace: op.CertOptions.Namespace, ServiceName: op.CertOptions.ServiceName, ExtraDNSNames: op.CertOptions.ExtraDNSNames,
				ExtraIPs: op.CertOptions.ExtraIPs, CertDuration: op.CertOptions.CertDuration, CADuration: op.CertOptions.CADuration,
				RotationSettle: op.CertOptions.RotationSettle,
			},
			VMDefaultImage: op.VMOptions.DefaultImage, VMUsageRefresh: op.VMOptions.UsageRefresh,
			VMFailedRetry: op.VMOptions.FailedRetry, FakeVMsURL: fakeURL, FakeVMsToken: fakeToken,
		}
	}
	abilities, err := encodeAbilities(others)
	if err != nil {
		return nil, err
	}
	s.Abilities = abilities
	if cfg.ExecProvider != nil {
		raw, err := json.Marshal(cfg.ExecProvider)
		if err != nil {
			return nil, fmt.Errorf("the kubeconfig's credential plugin: %w", err)
		}
		s.REST.Exec = raw
	}
	if cfg.AuthProvider != nil {
		return nil, fmt.Errorf("the kubeconfig uses the auth provider %q, which cannot be passed to parallel Ginkgo processes: use a credential plugin (exec) or run with PROCS=1", cfg.AuthProvider.Name)
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
	cfg := &rest.Config{
		Host: s.REST.Host, TLSClientConfig: s.REST.TLS, BearerToken: s.REST.BearerToken, BearerTokenFile: s.REST.BearerTokenFile,
		Username: s.REST.Username, Password: s.REST.Password, Impersonate: s.REST.Impersonate, QPS: s.REST.QPS, Burst: s.REST.Burst,
	}
	if len(s.REST.Exec) > 0 {
		cfg.ExecProvider = new(rest.Config).ExecProvider
		if err := json.Unmarshal(s.REST.Exec, &cfg.ExecProvider); err != nil {
			return nil, fmt.Errorf("the kubeconfig's credential plugin: %w", err)
		}
	}
	base, err := cluster.Connect(context.Background(), s.Provider, cfg, scheme.New())
	if err != nil {
		return nil, err
	}
	if base.Abilities, err = decodeAbilities(s.Abilities); err != nil {
		return nil, err
	}
	if o := s.Operator; o != nil {
		op := &Operator{
			Deployment: o.Deployment,
			CertOptions: certs.Options{
				Namespace: o.Certs.Namespace, ServiceName: o.Certs.ServiceName, ExtraDNSNames: o.Certs.ExtraDNSNames, ExtraIPs: o.Certs.ExtraIPs,
				CertDuration: o.Certs.CertDuration, CADuration: o.Certs.CADuration, RotationSettle: o.Certs.RotationSettle,
			},
			VMOptions: vm.Options{DefaultImage: o.VMDefaultImage, UsageRefresh: o.VMUsageRefresh, FailedRetry: o.VMFailedRetry},
		}
		if o.FakeVMsURL != "" {
			op.FakeVMs = vmfixture.RemoteFakeVMs(o.FakeVMsURL, o.FakeVMsToken)
		}
		base.Abilities = append(base.Abilities, op)
	}
	return base, nil
}
