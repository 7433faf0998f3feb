package manager

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/scheme"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	playbookwebhook "github.com/kubeharness/kubeharness/webhook/playbook"
)

const serviceName = "kubeharness-webhook-service.kubeharness-system.svc"

// testCA returns a CA pool and a serving certificate for serviceName it signed.
func testCA(t *testing.T) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: []string{serviceName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
}

func serve(t *testing.T, cert tls.Certificate, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://")
}

func TestAdmitCanary(t *testing.T) {
	s := scheme.New()
	trusted, cert := testCA(t)
	other, _ := testCA(t)
	defaulting := http.NewServeMux()
	defaulting.Handle(playbookwebhook.MutatePath, admission.WithDefaulter[*opsv1.Playbook](s, playbookwebhook.Defaulter{}))
	denying := http.NewServeMux()
	denying.Handle(playbookwebhook.MutatePath, &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Denied("not today") })})
	silent := http.NewServeMux()
	silent.Handle(playbookwebhook.MutatePath, &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })})

	cases := []struct {
		name    string
		handler http.Handler
		roots   *x509.CertPool
		host    string
		wantErr string
	}{
		{name: "the defaulting webhook behind a certificate the bundle verifies", handler: defaulting, roots: trusted, host: serviceName},
		{name: "a certificate the published bundle does not verify", handler: defaulting, roots: other, host: serviceName, wantErr: "certificate"},
		{name: "a certificate for another name", handler: defaulting, roots: trusted, host: "kubernetes.default.svc", wantErr: "certificate"},
		{name: "a denial", handler: denying, roots: trusted, host: serviceName, wantErr: "not today"},
		{name: "an answer that does not default", handler: silent, roots: trusted, host: serviceName, wantErr: "did not default"},
		{name: "no webhook at the path", handler: http.NewServeMux(), roots: trusted, host: serviceName, wantErr: "HTTP 404"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, cert, tc.handler)
			err := admitCanary(context.Background(), addr, &tls.Config{RootCAs: tc.roots, ServerName: tc.host, MinVersion: tls.VersionTLS12})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("canary failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("canary error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestCanaryAddr(t *testing.T) {
	for host, want := range map[string]string{"": "127.0.0.1:9443", "0.0.0.0": "127.0.0.1:9443", "::": "127.0.0.1:9443", "10.0.0.7": "10.0.0.7:9443", "::1": "[::1]:9443"} {
		if got := canaryAddr(host, 9443); got != want {
			t.Errorf("canaryAddr(%q) = %q, want %q", host, got, want)
		}
	}
}
