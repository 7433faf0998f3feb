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
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm"
)

// Parallel Ginkgo runs one provider, in the first process, and every
// process talks to the cluster it started: the first process calls Share
// on its Cluster, which writes the connection details (the admin's
// credentials among them) to a file only this user can read, and every
// process builds its own Cluster with Connect from that file. Only
// harness/suite's handle to the file crosses Ginkgo's loopback endpoint
// (SynchronizedBeforeSuite passes the bytes on), never the credentials.

// sharedCluster is what crosses from the first process to the others.
type sharedCluster struct {
	Provider string       `json:"provider"`
	REST     sharedConfig `json:"rest"`

	Deployment Deployment      `json:"deployment"`
	Abilities  []sharedAbility `json:"abilities,omitempty"`

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

// Share writes what another process needs to reach c to a file (mode 0600)
// in a directory of its own (mode 0700) with harness/suite's ShareFile and
// returns ShareFile's handle to it; remove removes both. fakeURL and
// fakeToken, when set, are where vmfixture.ServeFakeVMs serves c.FakeVMs.
func (c *Cluster) Share(fakeURL, fakeToken string) (shared string, remove func() error, err error) {
	data, err := c.shared(fakeURL, fakeToken)
	if err != nil {
		return "", nil, err
	}
	return suite.ShareFile(sharedFileName, data)
}

// shared serializes what another process needs to reach c.
func (c *Cluster) shared(fakeURL, fakeToken string) ([]byte, error) {
	cfg := c.Config
	s := sharedCluster{
		Provider: c.Provider,
		REST: sharedConfig{
			Host: cfg.Host, TLS: cfg.TLSClientConfig, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile,
			Username: cfg.Username, Password: cfg.Password, Impersonate: cfg.Impersonate, QPS: cfg.QPS, Burst: cfg.Burst,
		},
		Deployment: c.Deployment,
		Certs: sharedCerts{
			Namespace: c.CertOptions.Namespace, ServiceName: c.CertOptions.ServiceName, ExtraDNSNames: c.CertOptions.ExtraDNSNames,
			ExtraIPs: c.CertOptions.ExtraIPs, CertDuration: c.CertOptions.CertDuration, CADuration: c.CertOptions.CADuration,
			RotationSettle: c.CertOptions.RotationSettle,
		},
		VMDefaultImage: c.VMOptions.DefaultImage, VMUsageRefresh: c.VMOptions.UsageRefresh,
		VMFailedRetry: c.VMOptions.FailedRetry, FakeVMsURL: fakeURL, FakeVMsToken: fakeToken,
	}
	abilities, err := encodeAbilities(c.Abilities)
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

// Connect builds the Cluster of another process from the file Share wrote,
// by the handle Share returned. Its FakeVMs, when the first process has
// one, steers it over loopback.
func Connect(shared string) (*Cluster, error) {
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
	base, err := cluster.Connect(context.Background(), s.Provider, cfg, Scheme())
	if err != nil {
		return nil, err
	}
	if base.Abilities, err = decodeAbilities(s.Abilities); err != nil {
		return nil, err
	}
	cl := &Cluster{
		Cluster:    base,
		Deployment: s.Deployment,
		CertOptions: certs.Options{
			Namespace: s.Certs.Namespace, ServiceName: s.Certs.ServiceName, ExtraDNSNames: s.Certs.ExtraDNSNames, ExtraIPs: s.Certs.ExtraIPs,
			CertDuration: s.Certs.CertDuration, CADuration: s.Certs.CADuration, RotationSettle: s.Certs.RotationSettle,
		},
		VMOptions: vm.Options{DefaultImage: s.VMDefaultImage, UsageRefresh: s.VMUsageRefresh, FailedRetry: s.VMFailedRetry},
	}
	if s.FakeVMsURL != "" {
		cl.FakeVMs = vmfixture.RemoteFakeVMs(s.FakeVMsURL, s.FakeVMsToken)
	}
	return cl, nil
}
