package driver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial atomic.Int64

func newSerial() *big.Int { return big.NewInt(serial.Add(1)) }

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key (PEM) signed by ca: a server
// certificate for ips and dnsNames, or a client certificate when both are
// empty.
func (ca *testCA) issue(t *testing.T, cn string, ips []net.IP, dnsNames ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageClientAuth
	if len(ips) > 0 || len(dnsNames) > 0 {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// certDir writes a certificate directory; a nil file is left out.
func certDir(t *testing.T, ca, cert, key []byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{CAFile: ca, CertFile: cert, KeyFile: key} {
		if b != nil {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// tlsDaemon starts an HTTPS stand-in for the daemon answering /_ping, with
// serverCert/serverKey, requiring a client certificate signed by clientCA.
func tlsDaemon(t *testing.T, serverCert, serverKey []byte, clientCA *testCA) string {
	t.Helper()
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		_, _ = w.Write([]byte("OK"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	// The handshake failures the tests provoke are expected.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return "tcp://" + srv.Listener.Addr().String()
}

func TestTLSMaterialErrors(t *testing.T) {
	ca := newTestCA(t, "ca")
	cert, key := ca.issue(t, "client", nil)
	_, otherKey := ca.issue(t, "other", nil)
	const host = "tcp://docker.example:2376"

	tests := []struct {
		name     string
		ca       []byte
		cert     []byte
		key      []byte
		mode     TLSMode
		wantFile string
		wantText string
	}{
		{"missing client certificate", ca.pem, nil, key, TLSVerify, CertFile, "client certificate %s does not exist"},
		{"missing key", ca.pem, cert, nil, TLSNoVerify, KeyFile, "client key %s does not exist"},
		{"missing CA", nil, cert, key, TLSVerify, CAFile, "CA certificate %s does not exist"},
		{"CA not PEM", []byte("not a certificate"), cert, key, TLSVerify, CAFile, "CA certificate %s is not PEM"},
		{"CA is a key", key, cert, key, TLSVerify, CAFile, "CA certificate %s: no valid certificate in it"},
		{"key of another certificate", ca.pem, cert, otherKey, TLSVerify, CertFile, "client certificate %s with key"},
		{"certificate not PEM", ca.pem, []byte("garbage"), key, TLSVerify, CertFile, "client certificate %s is not PEM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := certDir(t, tt.ca, tt.cert, tt.key)
			_, err := NewDocker(DockerOptions{Host: host, TLS: tt.mode, CertPath: dir})
			if err == nil {
				t.Fatal("NewDocker accepted bad TLS material")
			}
			msg := err.Error()
			for _, want := range []string{host, strings.ReplaceAll(tt.wantText, "%s", filepath.Join(dir, tt.wantFile))} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if !IsPermanent(err) {
				t.Errorf("error %q is not permanent", msg)
			}
		})
	}

	t.Run("from DOCKER_CERT_PATH", func(t *testing.T) {
		dir := certDir(t, ca.pem, nil, nil)
		t.Setenv("DOCKER_HOST", host)
		t.Setenv("DOCKER_CERT_PATH", dir)
		t.Setenv("DOCKER_TLS_VERIFY", "1")
		_, err := NewDocker(DockerOptions{})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, CertFile)) || !strings.Contains(err.Error(), host) {
			t.Fatalf("NewDocker = %v, want an error naming %s and %s", err, filepath.Join(dir, CertFile), host)
		}
	})
}

func TestTLSHandshake(t *testing.T) {
	ca := newTestCA(t, "docker-ca")
	other := newTestCA(t, "other-ca")
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	serverCert, serverKey := ca.issue(t, "daemon", loopback)
	clientCert, clientKey := ca.issue(t, "client", nil)

	ping := func(t *testing.T, host string, mode TLSMode, dir string) error {
		t.Helper()
		d, err := NewDocker(DockerOptions{Host: host, TLS: mode, CertPath: dir, APIVersion: "1.41"})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return d.Ping(ctx)
	}
	expect := func(t *testing.T, err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("Ping succeeded")
		}
		if !IsPermanent(err) {
			t.Errorf("error %q is not permanent", err)
		}
		if !errors.Is(err, ErrTLS) {
			t.Errorf("error %q is not ErrTLS, which a controller tells its tenants about without the daemon's details", err)
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		t.Log(err)
	}

	t.Run("trusted both ways", func(t *testing.T) {
		host := tlsDaemon(t, serverCert, serverKey, ca)
		if err := ping(t, host, TLSVerify, certDir(t, ca.pem, clientCert, clientKey)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("daemon certificate signed by another CA", func(t *testing.T) {
		otherCert, otherKey := other.issue(t, "daemon", loopback)
		host := tlsDaemon(t, otherCert, otherKey, ca)
		dir := certDir(t, ca.pem, clientCert, clientKey)
		expect(t, ping(t, host, TLSVerify, dir), host, filepath.Join(dir, CAFile), "not signed by the CA")
		// Without verification the same daemon is accepted.
		if err := ping(t, host, TLSNoVerify, dir); err != nil {
			t.Fatalf("TLSNoVerify: %v", err)
		}
	})
	t.Run("daemon certificate for another host", func(t *testing.T) {
		elsewhere, elsewhereKey := ca.issue(t, "daemon", nil, "docker.example")
		host := tlsDaemon(t, elsewhere, elsewhereKey, ca)
		expect(t, ping(t, host, TLSVerify, certDir(t, ca.pem, clientCert, clientKey)), host, "not valid for that address")
	})
	t.Run("client certificate the daemon does not trust", func(t *testing.T) {
		host := tlsDaemon(t, serverCert, serverKey, other)
		dir := certDir(t, ca.pem, clientCert, clientKey)
		expect(t, ping(t, host, TLSVerify, dir), host, "refused the TLS handshake", filepath.Join(dir, CertFile))
	})
	t.Run("TLS to a plain daemon", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		host := "tcp://" + srv.Listener.Addr().String()
		expect(t, ping(t, host, TLSVerify, certDir(t, ca.pem, clientCert, clientKey)), host, "does not speak TLS")
	})
	t.Run("plain to a TLS daemon", func(t *testing.T) {
		host := tlsDaemon(t, serverCert, serverKey, ca)
		expect(t, ping(t, host, TLSOff, ""), host, "speaks TLS, but TLS is off")
	})
}
