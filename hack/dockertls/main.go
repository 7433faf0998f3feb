// Command dockertls makes the TLS material of a Docker daemon that listens
// on TCP with mutual TLS, as the VirtualMachine controller drives it from a
// kind cluster (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH):
// a CA, the daemon's serving certificate and a client certificate, in the
// file names the Docker CLI and daemon expect. hack/docker-up.sh runs it.
//
// It keeps material that is still good (parses, chains to the CA, valid for
// at least another 30 days, for the names asked for, every key private and
// the key of its certificate), so that running it again changes nothing the
// daemon or a Secret already uses.
//
// The keys are the whole Docker API of the host (root on it), so: DIR and
// DIR/client are real directories (a symlink is refused) of mode 0700, and
// every file is created new (O_EXCL, which follows no symlink) with its
// final mode, 0600 for keys, before a byte is written, then renamed into
// place.
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
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	why := check(*dir, strings.Split(*names, ","), time.Now())
	made, err := ensure(*dir, strings.Split(*names, ","), time.Now())
	if err != nil {
		fmt.Fprintf(os.Stderr, "dockertls: %v\n", err)
		os.Exit(1)
	}
	if made {
		fmt.Printf("dockertls: wrote new TLS material to %s (%v)\n", *dir, why)
	} else {
		fmt.Printf("dockertls: the TLS material in %s is still good\n", *dir)
	}
}

// ensure writes the material below dir unless what is there is still good,
// and reports whether it wrote.
func ensure(dir string, names []string, now time.Time) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return false, err
	}
	for _, d := range []string{dir, filepath.Join(dir, "client")} {
		if err := privateDir(d); err != nil {
			return false, err
		}
	}
	if err := check(dir, names, now); err == nil {
		return false, nil
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
		if err := writeNew(filepath.Join(dir, f.path), pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return false, err
		}
	}
	return true, nil
}

// privateDir makes path a directory of mode 0700, or gives the directory
// there that mode. It opens path without following a symlink, so the mode
// is set on the directory checked, and refuses anything else.
func privateDir(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	d, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: the keys are written only into a real directory; remove it, or pass --dir the directory it points to", path)
		} else if lerr == nil && !info.IsDir() {
			return fmt.Errorf("%s is not a directory; remove it or pass another --dir", path)
		}
		return err
	}
	defer d.Close()
	// Mkdir's mode is masked by the umask, and an existing directory keeps
	// whatever mode it had.
	return d.Chmod(0o700)
}

// writeNew replaces path with data. It creates a file of a random name
// beside it, new (O_EXCL: a file or symlink planted there makes it fail,
// never followed) and with mode 0600 from the start, sets mode, then renames
// it over path, which replaces a symlink at path rather than following it.
func writeNew(path string, data []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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
// that chain to it, are valid for keepFresh from now, each with its key
// (a regular file no one else may read), and (the server's) carry every
// name.
func check(dir string, names []string, now time.Time) error {
	ca, err := readCert(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return err
	}
	if err := checkKey(dir, "ca-key.pem", "ca.pem", ca); err != nil {
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
		if err := checkKey(dir, c.key, c.cert, cert); err != nil {
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

// checkKey fails unless dir/keyFile is a regular file that only its owner
// may read or write, holding the EC private key of cert (dir/certFile).
func checkKey(dir, keyFile, certFile string, cert *x509.Certificate) error {
	path := filepath.Join(dir, keyFile)
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%v)", keyFile, info.Mode().Type())
	}
	if info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %v: others may have read it", keyFile, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return fmt.Errorf("%s holds no PEM EC private key", keyFile)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return fmt.Errorf("%s: %w", keyFile, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return fmt.Errorf("%s is not the key of %s", keyFile, certFile)
	}
	return nil
}
