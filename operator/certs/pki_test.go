package certs

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	testManager = "system:serviceaccount:kubeharness-system:kubeharness-manager"
	testHost    = "kubeharness-webhook-service.kubeharness-system.svc"
)

// testPolicy is the policy of a manager set up as on envtest: the
// Service's names plus localhost and 127.0.0.1, certificates for a day.
func testPolicy() Policy {
	return NewPolicy(Options{ExtraDNSNames: []string{"localhost"}, ExtraIPs: []net.IP{net.ParseIP("127.0.0.1")}}, testManager)
}

// newTestCSR makes a PEM CSR with a fresh key for the names and IPs.
func newTestCSR(t *testing.T, dnsNames []string, ips []net.IP) []byte {
	t.Helper()
	key, _, err := NewKey()
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	csr, err := NewCSR(key, testHost, dnsNames, ips)
	if err != nil {
		t.Fatalf("NewCSR: %v", err)
	}
	return csr
}

// newEmailCSR makes a PEM CSR that also names an e-mail address.
func newEmailCSR(t *testing.T) []byte {
	t.Helper()
	key, _, err := NewKey()
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:        pkix.Name{CommonName: testHost},
		DNSNames:       []string{testHost},
		EmailAddresses: []string{"admin@example.com"},
	}, key)
	if err != nil {
		t.Fatalf("CreateCertificateRequest: %v", err)
	}
	return encodePEM("CERTIFICATE REQUEST", der)
}

// brokenSignatureCSR returns a valid CSR whose signature has one byte
// flipped, re-encoded as PEM. The last byte of the DER is the last byte of
// the ECDSA signature's S integer, so the structure still parses.
func brokenSignatureCSR(t *testing.T) []byte {
	t.Helper()
	good := newTestCSR(t, []string{testHost}, nil)
	block, _ := pem.Decode(good)
	if block == nil {
		t.Fatal("valid CSR does not decode")
	}
	der := append([]byte(nil), block.Bytes...)
	der[len(der)-1] ^= 0xff
	if _, err := x509.ParseCertificateRequest(der); err != nil {
		t.Fatalf("CSR with flipped signature byte no longer parses: %v", err)
	}
	return encodePEM("CERTIFICATE REQUEST", der)
}

// leafOf is what a certificate for csr says, as the request puts it.
func leafOf(csr *x509.CertificateRequest) Leaf {
	return Leaf{Subject: csr.Subject, DNSNames: csr.DNSNames, IPs: csr.IPAddresses, PublicKey: csr.PublicKey}
}

func newTestCA(t *testing.T, now time.Time, d time.Duration) *CA {
	t.Helper()
	ca, err := NewCA(now, d)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func parseRequestOrFail(t *testing.T, request []byte) *x509.CertificateRequest {
	t.Helper()
	csr, err := ParseRequest(request)
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	return csr
}

func parseOneCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		t.Fatalf("ParseCertificates: %v", err)
	}
	if len(certs) != 1 {
		t.Fatalf("got %d certificates, want 1", len(certs))
	}
	return certs[0]
}

func checkErr(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wantErr)
	}
	if !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("got error %q, want one containing %q", err, wantErr)
	}
}

func TestParseCA(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now, 24*time.Hour)
	other := newTestCA(t, now, 24*time.Hour)
	leafPEM, err := ca.Sign(leafOf(parseRequestOrFail(t, newTestCSR(t, []string{testHost}, nil))), time.Hour, now)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	cases := []struct {
		name    string
		certPEM []byte
		keyPEM  []byte
		now     time.Time
		wantErr string
	}{
		{name: "round trip", certPEM: ca.CertPEM, keyPEM: ca.KeyPEM, now: now},
		{name: "empty certificate", certPEM: nil, keyPEM: ca.KeyPEM, now: now, wantErr: "tls.crt: no PEM-encoded certificate"},
		{name: "key of another CA", certPEM: ca.CertPEM, keyPEM: other.KeyPEM, now: now, wantErr: "does not belong"},
		{name: "leaf certificate", certPEM: leafPEM, keyPEM: ca.KeyPEM, now: now, wantErr: "not a CA"},
		{name: "expired", certPEM: ca.CertPEM, keyPEM: ca.KeyPEM, now: ca.Cert.NotAfter.Add(time.Hour), wantErr: "expired"},
		{name: "garbage key", certPEM: ca.CertPEM, keyPEM: []byte("garbage"), now: now, wantErr: "tls.key: no PEM-encoded private key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCA(tc.certPEM, tc.keyPEM, tc.now)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(ca.Cert.Raw, got.Cert.Raw); diff != "" {
				t.Errorf("certificate mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(string(ca.CertPEM), string(got.CertPEM)); diff != "" {
				t.Errorf("certificate PEM mismatch (-want +got):\n%s", diff)
			}
			if !publicKeysEqual(ca.Cert.PublicKey, got.Key.Public()) {
				t.Errorf("parsed key does not match the CA certificate")
			}
		})
	}
}

func TestSignAndVerifyServing(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now, 24*time.Hour)
	other := newTestCA(t, now, 24*time.Hour)
	csr := parseRequestOrFail(t, newTestCSR(t, []string{testHost}, []net.IP{net.ParseIP("127.0.0.1")}))
	chain, err := ca.Sign(leafOf(csr), time.Hour, now)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	leaf := parseOneCert(t, chain)
	if diff := cmp.Diff([]string{testHost}, leaf.DNSNames); diff != "" {
		t.Errorf("DNS names mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(now.Add(time.Hour).Truncate(time.Second).UTC(), leaf.NotAfter); diff != "" {
		t.Errorf("NotAfter mismatch (-want +got):\n%s", diff)
	}

	cases := []struct {
		name    string
		bundle  []byte
		host    string
		wantErr string
	}{
		{name: "DNS name", bundle: ca.CertPEM, host: testHost},
		{name: "IP", bundle: ca.CertPEM, host: "127.0.0.1"},
		{name: "other host", bundle: ca.CertPEM, host: "other.svc", wantErr: "other.svc"},
		{name: "other CA", bundle: other.CertPEM, host: testHost, wantErr: "unknown authority"},
		{name: "merged bundle", bundle: MergeBundles(other.CertPEM, ca.CertPEM), host: testHost},
		{name: "empty bundle", bundle: nil, host: testHost, wantErr: "CA bundle holds no certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, VerifyServing(chain, tc.bundle, tc.host, now), tc.wantErr)
		})
	}
}

func TestSignCapsAtCAExpiry(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now, 2*time.Hour)
	csr := parseRequestOrFail(t, newTestCSR(t, []string{testHost}, nil))
	certPEM, err := ca.Sign(leafOf(csr), 10*time.Hour, now)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	got := parseOneCert(t, certPEM)
	if diff := cmp.Diff(ca.Cert.NotAfter, got.NotAfter); diff != "" {
		t.Errorf("NotAfter mismatch (-want +got):\n%s", diff)
	}
}

func TestMergeBundles(t *testing.T) {
	now := time.Now()
	a, b, c := namedCA(t, now, "A"), namedCA(t, now, "B"), namedCA(t, now, "C")
	cases := []struct {
		name    string
		bundles [][]byte
		want    []string
	}{
		{name: "A, B, A", bundles: [][]byte{a.CertPEM, b.CertPEM, a.CertPEM}, want: []string{"A", "B"}},
		{name: "B, A keeps order", bundles: [][]byte{b.CertPEM, a.CertPEM}, want: []string{"B", "A"}},
		{name: "nil and garbage ignored", bundles: [][]byte{nil, a.CertPEM, []byte("garbage"), b.CertPEM}, want: []string{"A", "B"}},
		{name: "multi-certificate bundle", bundles: [][]byte{append(append([]byte(nil), c.CertPEM...), a.CertPEM...), a.CertPEM, b.CertPEM, c.CertPEM}, want: []string{"C", "A", "B"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			certs, err := ParseCertificates(MergeBundles(tc.bundles...))
			if err != nil {
				t.Fatalf("ParseCertificates: %v", err)
			}
			var got []string
			for _, c := range certs {
				got = append(got, c.Subject.CommonName)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CommonNames mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("nothing to merge", func(t *testing.T) {
		if got := MergeBundles(nil, []byte("garbage")); len(got) != 0 {
			t.Errorf("MergeBundles(nil, garbage) = %q, want empty", got)
		}
	})
}

// namedCA makes a self-signed CA certificate with the given CommonName, as
// NewCA names every CA made in the same second alike.
func namedCA(t *testing.T, now time.Time, commonName string) *CA {
	t.Helper()
	key, keyPEM, err := NewKey()
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	serial, err := randomSerial()
	if err != nil {
		t.Fatalf("randomSerial: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("CreateCertificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("ParseCertificate: %v", err)
	}
	return &CA{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), Key: key, KeyPEM: keyPEM}
}

func TestRenewAt(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name     string
		lifetime time.Duration
		want     time.Time
	}{
		{name: "3h certificate", lifetime: 3 * time.Hour, want: start.Add(2 * time.Hour)},
		{name: "24h certificate", lifetime: 24 * time.Hour, want: start.Add(16 * time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &x509.Certificate{NotBefore: start, NotAfter: start.Add(tc.lifetime)}
			if diff := cmp.Diff(tc.want, RenewAt(c)); diff != "" {
				t.Errorf("RenewAt mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewCASubjectsDiffer: the old and new CA of a rotation, made in the
// same second, must not share a subject, and the CommonName must fit the
// 64-character X.509 bound.
func TestNewCASubjectsDiffer(t *testing.T) {
	now := time.Now()
	a, err := NewCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if a.Cert.Subject.CommonName == b.Cert.Subject.CommonName {
		t.Errorf("two CAs share the subject %q", a.Cert.Subject.CommonName)
	}
	for _, cn := range []string{a.Cert.Subject.CommonName, b.Cert.Subject.CommonName} {
		if len(cn) > 64 {
			t.Errorf("CommonName %q is %d characters, over the X.509 bound of 64", cn, len(cn))
		}
	}
}
