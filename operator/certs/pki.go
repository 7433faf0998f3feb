package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA signs serving certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
	KeyPEM  []byte
}

// NewCA makes a self-signed ECDSA P-256 CA valid from now for d.
func NewCA(now time.Time, d time.Duration) (*CA, error) {
	key, keyPEM, err := NewKey()
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	suffix := fmt.Sprintf("%016x", serial)[:8]
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// Unique per CA, so that the old and new CA of a rotation never share
		// a subject.
		Subject:   pkix.Name{CommonName: fmt.Sprintf("kubeharness-webhook-ca@%d-%s", now.Unix(), suffix), Organization: []string{"kubeharness"}},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(d),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), Key: key, KeyPEM: keyPEM}, nil
}

// ParseCA reads a CA from PEM. The errors say what is wrong with it, for a
// person to fix or to delete the Secret so that a new CA is made.
func ParseCA(certPEM, keyPEM []byte, now time.Time) (*CA, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyCert, err)
	}
	cert := certs[0]
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("%s: certificate %q is not a CA (no CA basic constraint or certSign usage)", keyCert, cert.Subject.CommonName)
	}
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("%s: CA %q expired at %s", keyCert, cert.Subject.CommonName, cert.NotAfter.Format(time.RFC3339))
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyKey, err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%s does not belong to the certificate in %s", keyKey, keyCert)
	}
	return &CA{Cert: cert, CertPEM: encodePEM("CERTIFICATE", cert.Raw), Key: key, KeyPEM: keyPEM}, nil
}

// NewKey makes an ECDSA P-256 key and its PEM.
func NewKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, encodePEM("PRIVATE KEY", der), nil
}

// ParseKey reads a PKCS#8, EC or PKCS#1 private key from PEM.
func ParseKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM-encoded private key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("unsupported private key type %T", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("PEM block is not a PKCS#8, EC or PKCS#1 private key")
}

// ParseCertificates reads every certificate in a PEM bundle.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM-encoded certificate")
	}
	return out, nil
}

// NewCSR makes a PEM certificate request for the DNS names and IPs.
func NewCSR(key crypto.Signer, commonName string, dnsNames []string, ips []net.IP) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: commonName}, DNSNames: dnsNames, IPAddresses: ips,
	}, key)
	if err != nil {
		return nil, err
	}
	return encodePEM("CERTIFICATE REQUEST", der), nil
}

// ParseRequest decodes and checks the signature of a CSR's request.
func ParseRequest(request []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request holds no PEM CERTIFICATE REQUEST block")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request: signature does not verify: %w", err)
	}
	return csr, nil
}

// Leaf is what a serving certificate says about its holder. The signer
// builds it from its Policy, never by copying a request.
type Leaf struct {
	Subject   pkix.Name
	DNSNames  []string
	IPs       []net.IP
	PublicKey crypto.PublicKey
}

// Sign issues a serving certificate for leaf, valid from now for d but
// never past the CA's own expiry. It carries nothing else: no extension a
// request asked for, and only the server auth extended usage.
func (ca *CA) Sign(leaf Leaf, d time.Duration, now time.Time) ([]byte, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(d)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: leaf.Subject,
		DNSNames: leaf.DNSNames, IPAddresses: leaf.IPs,
		NotBefore: now.Add(-5 * time.Minute), NotAfter: notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		AuthorityKeyId: ca.Cert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, leaf.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	return encodePEM("CERTIFICATE", der), nil
}

// MergeBundles joins PEM bundles, dropping duplicate certificates and
// keeping the order they first appear in.
func MergeBundles(bundles ...[]byte) []byte {
	var out bytes.Buffer
	seen := map[[32]byte]bool{}
	for _, b := range bundles {
		certs, err := ParseCertificates(b)
		if err != nil {
			continue
		}
		for _, c := range certs {
			sum := sha256.Sum256(c.Raw)
			if seen[sum] {
				continue
			}
			seen[sum] = true
			out.Write(encodePEM("CERTIFICATE", c.Raw))
		}
	}
	return out.Bytes()
}

// RenewAt is when a certificate is renewed: two thirds into its lifetime.
func RenewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// VerifyServing checks that the first certificate of chainPEM is valid for
// host at now and chains to a CA in bundlePEM.
func VerifyServing(chainPEM, bundlePEM []byte, host string, now time.Time) error {
	chain, err := ParseCertificates(chainPEM)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundlePEM) {
		return errors.New("CA bundle holds no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = chain[0].Verify(x509.VerifyOptions{
		DNSName: host, Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func encodePEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
