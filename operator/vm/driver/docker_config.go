package driver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// TLSMode says whether and how the docker driver speaks TLS to the daemon.
type TLSMode int

// TLS modes.
const (
	// TLSFromEnv decides as the Docker client does: TLSVerify when
	// DOCKER_TLS_VERIFY is set (non-empty), else TLSNoVerify when a
	// certificate directory is given (DockerOptions.CertPath or
	// DOCKER_CERT_PATH), else TLSOff.
	TLSFromEnv TLSMode = iota
	// TLSOff: no TLS (the local socket, or a daemon on plain TCP).
	TLSOff
	// TLSNoVerify: TLS with the client certificate cert.pem/key.pem, but
	// the daemon's certificate is not verified. Insecure; for tests.
	TLSNoVerify
	// TLSVerify: TLS with the client certificate cert.pem/key.pem, and the
	// daemon's certificate must be signed by ca.pem (only that CA, not the
	// system's) and valid for the daemon's host name or address.
	TLSVerify
)

func (m TLSMode) String() string {
	switch m {
	case TLSFromEnv:
		return "from-env"
	case TLSOff:
		return "off"
	case TLSNoVerify:
		return "no-verify"
	case TLSVerify:
		return "verify"
	default:
		return fmt.Sprintf("TLSMode(%d)", int(m))
	}
}

// Environment variables the docker driver reads, as the Docker CLI does.
const (
	EnvDockerHost       = client.EnvOverrideHost       // DOCKER_HOST
	EnvDockerTLSVerify  = client.EnvTLSVerify          // DOCKER_TLS_VERIFY
	EnvDockerCertPath   = client.EnvOverrideCertPath   // DOCKER_CERT_PATH
	EnvDockerAPIVersion = client.EnvOverrideAPIVersion // DOCKER_API_VERSION
)

// Names of the files in the certificate directory, as the Docker CLI has
// them.
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// DefaultCPUSampleInterval is DockerOptions.CPUSampleInterval's default.
const DefaultCPUSampleInterval = 500 * time.Millisecond

// DefaultPidsLimit is DockerOptions.PidsLimit's default.
const DefaultPidsLimit = 1024

// DockerOptions configure the docker driver. The zero value reads the
// environment as the Docker CLI does; a field that is set overrides its
// environment variable.
type DockerOptions struct {
	// Host is the daemon's address: unix:///var/run/docker.sock,
	// tcp://10.0.0.5:2376, ... Empty: DOCKER_HOST, else the local socket.
	Host string
	// TLS says whether the connection uses TLS; TLSFromEnv (the zero
	// value) follows DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
	TLS TLSMode
	// CertPath is the directory holding ca.pem, cert.pem and key.pem.
	// Empty: DOCKER_CERT_PATH, else ~/.docker. Unused without TLS.
	CertPath string
	// APIVersion fixes the Engine API version ("1.41"). Empty:
	// DOCKER_API_VERSION, else the version is negotiated with the daemon on
	// first use (the highest both sides speak).
	APIVersion string
	// Pull lets Create pull an image that is not present locally. Off by
	// default: a missing image is ErrImageNotFound.
	Pull bool
	// CPUSampleInterval is how long the first Usage call for a server waits
	// between its two stats samples (see the package documentation).
	// Zero means DefaultCPUSampleInterval.
	CPUSampleInterval time.Duration
	// PidsLimit is the most processes (and threads) a container may have.
	// Zero means DefaultPidsLimit.
	PidsLimit int64
}

// dockerConfig is DockerOptions with the environment and defaults applied.
type dockerConfig struct {
	host       string
	tls        TLSMode // never TLSFromEnv
	certPath   string  // set when tls is not TLSOff
	apiVersion string
	pull       bool
	interval   time.Duration
	pidsLimit  int64
}

func (c dockerConfig) caFile() string   { return filepath.Join(c.certPath, CAFile) }
func (c dockerConfig) certFile() string { return filepath.Join(c.certPath, CertFile) }
func (c dockerConfig) keyFile() string  { return filepath.Join(c.certPath, KeyFile) }

// resolve applies the environment (getenv) and the defaults to opts.
func (opts DockerOptions) resolve(getenv func(string) string) (dockerConfig, error) {
	c := dockerConfig{
		host:       firstNonEmpty(opts.Host, getenv(EnvDockerHost), client.DefaultDockerHost),
		tls:        opts.TLS,
		certPath:   firstNonEmpty(opts.CertPath, getenv(EnvDockerCertPath)),
		apiVersion: strings.TrimPrefix(firstNonEmpty(opts.APIVersion, strings.TrimSpace(getenv(EnvDockerAPIVersion))), "v"),
		pull:       opts.Pull,
		interval:   opts.CPUSampleInterval,
		pidsLimit:  opts.PidsLimit,
	}
	if c.interval <= 0 {
		c.interval = DefaultCPUSampleInterval
	}
	if c.pidsLimit <= 0 {
		c.pidsLimit = DefaultPidsLimit
	}
	if _, err := client.ParseHostURL(c.host); err != nil {
		return c, fmt.Errorf("docker driver: daemon address %q: %w", c.host, err)
	}
	switch c.tls {
	case TLSFromEnv:
		switch {
		case getenv(EnvDockerTLSVerify) != "":
			c.tls = TLSVerify
		case c.certPath != "":
			c.tls = TLSNoVerify
		default:
			c.tls = TLSOff
		}
	case TLSOff, TLSNoVerify, TLSVerify:
	default:
		return c, fmt.Errorf("docker driver: unknown TLS mode %d", int(c.tls))
	}
	if c.tls == TLSOff {
		c.certPath = ""
	} else if c.certPath == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, fmt.Errorf("docker driver: TLS for %s: no certificate directory (%s unset) and no home directory for ~/.docker: %w", c.host, EnvDockerCertPath, err)
		}
		c.certPath = filepath.Join(home, ".docker")
	}
	return c, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// clientOptions returns the client options for c, loading the TLS
// material. Its errors name the file at fault and the daemon it was for.
func (c dockerConfig) clientOptions() ([]client.Opt, error) {
	var opts []client.Opt
	if c.tls != TLSOff {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		// The same transport settings as the client's default one.
		tr := &http.Transport{TLSClientConfig: tc, MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second}
		opts = append(opts, client.WithHTTPClient(&http.Client{Transport: tr, CheckRedirect: client.CheckRedirect}))
	}
	// WithHost after WithHTTPClient: it sets the dialer of the transport.
	opts = append(opts, client.WithHost(c.host))
	if c.apiVersion != "" {
		opts = append(opts, client.WithAPIVersion(c.apiVersion))
	}
	return opts, nil
}

// tlsConfig loads the certificate directory for TLSNoVerify or TLSVerify.
func (c dockerConfig) tlsConfig() (*tls.Config, error) {
	fail := func(format string, a ...any) error {
		return Permanent(fmt.Errorf("docker driver: TLS for daemon %s (certificates from %s): %s", c.host, c.certPath, fmt.Sprintf(format, a...)))
	}
	certPEM, err := readPEM(c.certFile(), "client certificate")
	if err != nil {
		return nil, fail("%v", err)
	}
	keyPEM, err := readPEM(c.keyFile(), "client key")
	if err != nil {
		return nil, fail("%v", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fail("client certificate %s with key %s: %v", c.certFile(), c.keyFile(), err)
	}
	tc := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
	}
	if c.tls == TLSNoVerify {
		// Asked for, as DOCKER_CERT_PATH without DOCKER_TLS_VERIFY asks the
		// Docker client.
		tc.InsecureSkipVerify = true
		return tc, nil
	}
	caPEM, err := readPEM(c.caFile(), "CA certificate")
	if err != nil {
		return nil, fail("%v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fail("CA certificate %s: no valid certificate in it", c.caFile())
	}
	tc.RootCAs = pool
	return tc, nil
}

// readPEM reads a PEM file, saying which one (what, path) when it is
// missing, unreadable or not PEM.
func readPEM(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s %s does not exist", what, path)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %v", what, path, err)
	}
	if block, _ := pem.Decode(b); block == nil {
		return nil, fmt.Errorf("%s %s is not PEM", what, path)
	}
	return b, nil
}
