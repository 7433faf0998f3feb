package cluster

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig returns a kubeconfig that connects as cfg does, the inverse
// of LoadKubeconfig: the API server's address, CA and server name, and the
// client's credentials (client certificate, bearer token or token file,
// basic auth, auth provider or credential plugin) and impersonation. Its
// cluster, user and context are all called name; the context is current.
//
// A TLS file of cfg is named when cfg carries no data for it, since a
// kubeconfig may not hold both. The file's mode is the caller's to set:
// it holds credentials, so 0600. What a kubeconfig cannot hold is left
// out: client-side settings (QPS, Burst, Timeout, UserAgent) and functions
// (Dial, Proxy, WrapTransport).
func Kubeconfig(cfg *rest.Config, name string) ([]byte, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, errors.New("cluster: a kubeconfig needs the API server's address: the rest.Config has no Host")
	}
	if name == "" {
		return nil, errors.New("cluster: a kubeconfig needs a name for its cluster, user and context")
	}
	tls := cfg.TLSClientConfig
	c := &clientcmdapi.Cluster{
		Server: cfg.Host, CertificateAuthorityData: tls.CAData,
		InsecureSkipTLSVerify: tls.Insecure, TLSServerName: tls.ServerName, DisableCompression: cfg.DisableCompression,
	}
	if len(tls.CAData) == 0 {
		c.CertificateAuthority = tls.CAFile
	}
	u := &clientcmdapi.AuthInfo{
		ClientCertificateData: tls.CertData, ClientKeyData: tls.KeyData,
		Username: cfg.Username, Password: cfg.Password,
		Impersonate: cfg.Impersonate.UserName, ImpersonateUID: cfg.Impersonate.UID,
		ImpersonateGroups: cfg.Impersonate.Groups, ImpersonateUserExtra: cfg.Impersonate.Extra,
		AuthProvider: cfg.AuthProvider, Exec: cfg.ExecProvider,
	}
	if len(tls.CertData) == 0 {
		u.ClientCertificate = tls.CertFile
	}
	if len(tls.KeyData) == 0 {
		u.ClientKey = tls.KeyFile
	}
	// client-go reads a token file again as it changes; the token it read
	// last is only a copy.
	if cfg.BearerTokenFile != "" {
		u.TokenFile = cfg.BearerTokenFile
	} else {
		u.Token = cfg.BearerToken
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = c
	kc.AuthInfos[name] = u
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("cluster: writing the kubeconfig of %s: %w", cfg.Host, err)
	}
	return data, nil
}
