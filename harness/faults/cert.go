package faults

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// validity is how long the proxy's certificates are valid: a proxy lives
// as long as a test run.
const validity = 24 * time.Hour

// selfSigned makes a serving certificate for 127.0.0.1 that is its own CA.
// It returns the certificate with its key, and the certificate in PEM for
// clients to trust.
func selfSigned() (tls.Certificate, []byte, error) {
	key, tmpl, err := template("kubeharness fault proxy")
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// authority issues the client certificates a proxy knows its clients by.
// Its key lives in memory only, for as long as the proxy does, so no
// certificate it issued is good for anything once the proxy is gone, nor
// anywhere but at the proxy: the API server does not trust it.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// pool holds cert alone, for the proxy's listener to verify clients by.
	pool *x509.CertPool
}

func newAuthority(name string) (*authority, error) {
	key, tmpl, err := template(name)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageCertSign
	tmpl.BasicConstraintsValid, tmpl.IsCA, tmpl.MaxPathLenZero = true, true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &authority{cert: cert, key: key, pool: pool}, nil
}

// issue makes a client certificate named name, signed by a. It returns
// the certificate and its key in PEM, and the SHA-256 of the certificate,
// which a client presenting it is known by.
func (a *authority) issue(name string) (certPEM, keyPEM []byte, sum [sha256.Size]byte, err error) {
	key, tmpl, err := template(name)
	if err != nil {
		return nil, nil, sum, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, sum, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, sum, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		sha256.Sum256(der), nil
}

// template is a new key and a certificate template for it named name,
// valid from a minute ago for validity.
func template(name string) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	return key, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
	}, nil
}
