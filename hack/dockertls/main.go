// Command dockertls makes the TLS material of a Docker daemon that listens
// on TCP with mutual TLS, as the VirtualMachine controller drives it from a
// kind cluster (seed 002: DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH):
// a CA, the daemon's serving certificate and a client certificate, in the
// file names the Docker CLI and daemon expect. hack/docker-up.sh runs it.
//
// It keeps material that is still good (parses, chains to the CA, valid for
// at least another 30 days, for the names asked for), so that running it
// again changes nothing the daemon or a Secret already uses.
//
//	dir/ca.pem, dir/ca-key.pem            the CA
//	dir/server-cert.pem, server-key.pem   the daemon's (--tlscert, --tlskey)
//	dir/client/{ca,cert,key}.pem          a client's DOCKER_CERT_PATH
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ServerName is the name clients reach the daemon by from a kind cluster:
// the harness maps it to the kind network's gateway with a hostAlias, so
// the certificate need not know an address chosen after it was made.
const ServerName = "docker-host.kubeharness"

const (
	lifetime  = 365 * 24 * time.Hour
	keepFresh = 30 * 24 * time.Hour
)

func main() {
	dir := flag.String("dir", "/etc/kubeharness/docker-tls", "where the material is written")
	names := flag.String("names", ServerName+",localhost,127.0.0.1", "comma-separated DNS names and IPs of the daemon's certificate")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: dockertls [--dir DIR] [--names N1,N2]\n\nMakes a CA, a Docker daemon serving certificate and a client certificate for mutual TLS.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "dockertls: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	made, err := ensure(*dir, strings.Split(*names, ","), time.Now())
	if err != nil {
		fmt.Fprintf(os.Stderr, "dockertls: %v\n", err)
		os.Exit(1)
	}
	if made {
		fmt.Printf("dockertls: wrote new TLS material to %s\n", *dir)
	} else {
		fmt.Printf("dockertls: the TLS material in %s is still good\n", *dir)
	}
}

// ensure writes the material below dir unless what is there is still good,
// and reports whether it wrote.
func ensure(dir string, names []string, now time.Time) (bool, error) {
	if err := check(dir, names, now); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Join(dir, "client"), 0o700); err != nil {
		return false, err
	}
	caKey, caCert, caDER, err := issue(nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: "kubeharness docker CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, now)
	if err != nil {
		return false, err
	}
	server := &x509.Certificate{
		Subject: pkix.Name{CommonName: ServerName}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			server.IPAddresses = append(server.IPAddresses, ip)
		} else if n != "" {
			server.DNSNames = append(server.DNSNames, n)
		}
	}
	serverKey, _, serverDER, err := issue(caKey, caCert, server, now)
	if err != nil {
		return false, err
	}
	clientKey, _, clientDER, err := issue(caKey, caCert, &x509.Certificate{
		Subject: pkix.Name{CommonName: "kubeharness-vm-controller"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now)
	if err != nil {
		return false, err
	}
	files := []struct {
		path string
		typ  string
		der  []byte
		mode os.FileMode
	}{
		{"ca.pem", "CERTIFICATE", caDER, 0o644},
		{"ca-key.pem", "EC PRIVATE KEY", caKey, 0o600},
		{"server-cert.pem", "CERTIFICATE", serverDER, 0o644},
		{"server-key.pem", "EC PRIVATE KEY", serverKey, 0o600},
		{"client/ca.pem", "CERTIFICATE", caDER, 0o644},
		{"client/cert.pem", "CERTIFICATE", clientDER, 0o644},
		{"client/key.pem", "EC PRIVATE KEY", clientKey, 0o600},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if err := os.WriteFile(p+".tmp", pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return false, err
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return false, err
		}
	}
	return true, nil
}

// issue makes a key and a certificate from tmpl, signed by the CA (or self-
// signed when caKey is nil), and returns the key's and the certificate's DER.
func issue(caKeyDER []byte, ca *x509.Certificate, tmpl *x509.Certificate, now time.Time) (keyDER []byte, cert *x509.Certificate, certDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, now.Add(-time.Hour), now.Add(lifetime)
	parent, signer := tmpl, any(key)
	if caKeyDER != nil {
		caKey, err := x509.ParseECPrivateKey(caKeyDER)
		if err != nil {
			return nil, nil, nil, err
		}
		parent, signer = ca, caKey
	}
	certDER, err = x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, nil, err
	}
	if cert, err = x509.ParseCertificate(certDER); err != nil {
		return nil, nil, nil, err
	}
	keyDER, err = x509.MarshalECPrivateKey(key)
	return keyDER, cert, certDER, err
}

// check fails unless dir holds a CA and server and client certificates
// that chain to it, are valid for keepFresh from now, match their keys'
// files, and (the server's) carry every name.
func check(dir string, names []string, now time.Time) error {
	ca, err := readCert(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, c := range []struct {
		cert, key string
		usage     x509.ExtKeyUsage
	}{
		{"server-cert.pem", "server-key.pem", x509.ExtKeyUsageServerAuth},
		{"client/cert.pem", "client/key.pem", x509.ExtKeyUsageClientAuth},
	} {
		cert, err := readCert(filepath.Join(dir, c.cert))
		if err != nil {
			return err
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now.Add(keepFresh), KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
			return fmt.Errorf("%s: %w", c.cert, err)
		}
		if _, err := os.Stat(filepath.Join(dir, c.key)); err != nil {
			return err
		}
		if c.usage == x509.ExtKeyUsageServerAuth {
			for _, n := range names {
				if n != "" && cert.VerifyHostname(n) != nil {
					return fmt.Errorf("%s is not for %s", c.cert, n)
				}
			}
		}
	}
	clientCA, err := os.ReadFile(filepath.Join(dir, "client", "ca.pem"))
	if err != nil {
		return err
	}
	if !slices.Equal(clientCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})) {
		return errors.New("client/ca.pem is not ca.pem")
	}
	return nil
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}
