package controlplane

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// AddUser issues a client certificate of the user's own identity, signed
// by the control plane's CA, and its kubeconfig carries that certificate,
// not the admin's, and no impersonation.
func TestAddUserIssuesTheUsersOwnCertificate(t *testing.T) {
	pki, err := newControlPlanePKI()
	if err != nil {
		t.Fatal(err)
	}
	c := &ControlPlane{pki: pki, Config: &rest.Config{
		Host: "https://127.0.0.1:6443",
		TLSClientConfig: rest.TLSClientConfig{
			CAData: pki.caCert, CertData: pki.adminCert, KeyData: pki.adminKey,
		},
		Impersonate: rest.ImpersonationConfig{UserName: "someone"},
	}}
	user, groups := "system:serviceaccount:kubeharness-system:kubeharness-manager", []string{"system:serviceaccounts", "system:serviceaccounts:kubeharness-system"}
	cfg, err := c.AddUser(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(cfg.CertData, pki.adminCert) || bytes.Equal(cfg.KeyData, pki.adminKey) || cfg.Impersonate.UserName != "" {
		t.Fatal("AddUser returned the admin's credentials or impersonation")
	}
	block, _ := pem.Decode(cfg.CertData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != user || !slices.Equal(cert.Subject.Organization, groups) {
		t.Errorf("certificate subject %v, want CN %s and O %v", cert.Subject, user, groups)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pki.caCert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the control plane's CA does not vouch for the certificate as a client's: %v", err)
	}

	data, err := UserKubeConfig(cfg, user)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ai := kc.AuthInfos[user]
	if ai == nil || !bytes.Equal(ai.ClientCertificateData, cfg.CertData) || ai.Impersonate != "" || len(ai.ImpersonateGroups) != 0 {
		t.Errorf("kubeconfig user %+v: want the user's own certificate and no impersonation", ai)
	}
	if bytes.Contains(data, pki.adminKey) {
		t.Error("the kubeconfig holds the admin's key")
	}
}
