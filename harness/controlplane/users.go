package controlplane

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// AddUser returns a client configuration that authenticates as user in
// groups with a client certificate of its own, which the control plane's CA
// signs (controller-runtime's envtest calls this AddUser too). The API
// server applies that user's RBAC, whatever the client asks: unlike the
// admin configuration with impersonation set (KubeConfig), a holder of this
// one cannot become anyone else unless RBAC lets the user impersonate.
func (c *ControlPlane) AddUser(user string, groups ...string) (*rest.Config, error) {
	if user == "" {
		return nil, errors.New("AddUser: the user needs a name")
	}
	if c.pki == nil || c.Config == nil {
		return nil, errors.New("AddUser: the control plane is not running")
	}
	cert, key, err := c.pki.issue(pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("issuing a client certificate for %s: %w", user, err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.CertData, cfg.KeyData = cert, key
	cfg.Impersonate = rest.ImpersonationConfig{}
	return cfg, nil
}

// UserKubeConfig returns a kubeconfig for the control plane that
// authenticates with cfg's client certificate (AddUser), named user, and
// carries cfg's impersonation when it has one.
func UserKubeConfig(cfg *rest.Config, user string) ([]byte, error) {
	if len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
		return nil, fmt.Errorf("the configuration of %s holds no client certificate: make it with AddUser", user)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: user, Namespace: "default"}
	kc.CurrentContext = "envtest"
	return clientcmd.Write(*kc)
}
