package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// apiServer is a tuned kube-apiserver (or kube-apiserver-test:
// APIServerBinary) on the control plane's certificates, its etcd reached
// on etcd's socket in the same directory, ready once readyPath answers.
type apiServer struct {
	proc
	// path is the binary; dir holds the certificates and etcd's socket,
	// and is the working directory.
	path, dir string
	port      int
	// flags follow the addresses, certificates and etcd's: the flags of
	// Options.APIServerFlags, the tuned ones and the audit log's.
	flags []string
	out   io.Writer
	// readyPath is what the API server answers 200 on once ready: a
	// restart waits on it again.
	readyPath string
	pki       *controlPlanePKI
}

func (*apiServer) name() Component { return APIServer }

// url is where the API server serves.
func (a *apiServer) url() string { return "https://127.0.0.1:" + strconv.Itoa(a.port) }

func (a *apiServer) start() error {
	cmd := command(a.out, a.path, append([]string{
		"--etcd-servers=" + etcdClientURL,
		"--advertise-address=127.0.0.1", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(a.port),
		"--cert-dir=" + a.dir,
		"--tls-cert-file=" + filepath.Join(a.dir, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(a.dir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(a.dir, "ca.crt"),
		"--service-account-issuer=" + a.url() + "/",
		"--service-account-key-file=" + filepath.Join(a.dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(a.dir, "sa.key"),
	}, a.flags...)...)
	cmd.Dir = a.dir
	return a.run(cmd)
}

// admin is the admin's (system:masters) client configuration.
func (a *apiServer) admin() *rest.Config {
	return &rest.Config{
		Host: a.url(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: a.pki.caCert, CertData: a.pki.adminCert, KeyData: a.pki.adminKey,
		},
	}
}

func (a *apiServer) ready(ctx context.Context) error {
	return a.wait(ctx, a.readyPath, nil)
}

// wait returns once the API server answers path with 200, each answer
// until then passed to observe when set.
func (a *apiServer) wait(ctx context.Context, path string, observe func(status int, body []byte)) error {
	hc, err := rest.HTTPClientFor(a.admin())
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	return a.p.WaitHTTP(ctx, hc, a.url()+path, observe)
}

func (*apiServer) stopGrace() time.Duration { return 0 }

// tunedReadyPath is what a start from a template waits for: /readyz
// without the two post-start hooks that only re-check bootstrap objects
// the template already holds (each sleeps a whole second before its first
// try).
const tunedReadyPath = "/readyz?exclude=poststarthook/rbac/bootstrap-roles&exclude=poststarthook/scheduling/bootstrap-system-priority-classes"

// tunedAPIServerFlags were chosen by measurement (`kubeharness bench`).
func tunedAPIServerFlags() []string {
	return []string{
		// API Priority and Fairness bootstraps and watches its own
		// configuration; a test API server needs no fairness.
		"--enable-priority-and-fairness=false",
		// No master lease or Endpoints object for the kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// On SIGTERM the API server drains its non-long-running requests,
		// answering new ones 429 with Retry-After, and then gives open
		// watches 2 s. Without it, it waits up to its request timeout
		// (a minute) for watches that never end, so every stop and restart
		// with a client watching ran into the SIGKILL grace (5 s for a
		// restart, 20 s for a stop).
		"--shutdown-send-retry-after=true",
	}
}

// APIServerBinary is the API server a tuned start of o runs from dir:
// kube-apiserver-test, kube-apiserver with the built-in APIs' OpenAPI
// documents built on first request instead of at start, when dir holds it
// and o does not ask for the plain one (Options.PlainAPIServer);
// kube-apiserver otherwise.
func APIServerBinary(dir string, o Options) string {
	if !o.PlainAPIServer {
		if fi, err := os.Stat(filepath.Join(dir, apiServerTestBinary)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return apiServerTestBinary
		}
	}
	return apiServerBinary
}

// The two flag sets a tuned API server starts from (Options.APIServerFlags;
// the tuned flags, ports, certificates and etcd's address are added):
//   - EnvtestAPIServerFlags, controller-runtime envtest's own, for the
//     drop-in (harness/envtest), so that a suite written for envtest sees
//     the API server it expects;
//   - HarnessAPIServerFlags, controlplane.Start's default, for suites that
//     test what a cluster enforces (the Node authorizer, NodeRestriction,
//     owner-reference permissions) and need room for many Services.
// Either is part of the etcd template's identity: the template holds
// objects (the default ServiceCIDR) that depend on them.

// EnvtestAPIServerFlags are the flags controller-runtime's envtest runs
// kube-apiserver with: no ServiceAccount admission, RBAC only, a small
// Service range.
func EnvtestAPIServerFlags() []string {
	return []string{
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
		"--authorization-mode=RBAC",
	}
}

// HarnessAPIServerFlags are the settings a harness API server runs with
// unless Options.APIServerFlags says otherwise.
func HarnessAPIServerFlags() []string {
	return []string{
		// Room for a few thousand Services: the AppService benchmark makes 1,000.
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		// Node lets kubelets (and specs impersonating them) update their own
		// Node status, as in a cluster; NodeRestriction keeps them to it.
		// OwnerReferencesPermissionEnforcement, as hardened clusters run it:
		// an owner reference that blocks the owner's deletion needs update on
		// the owner's finalizers, which the manager's role grants for that.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
		// No controller-manager creates ServiceAccount tokens here.
		"--disable-admission-plugins=ServiceAccount",
	}
}

// apiServerFlags are the flags after the addresses, certificates and
// etcd's that a tuned start of o runs the API server with, its
// certificates in dir.
func apiServerFlags(o Options, dir string) []string {
	return append(append(slices.Clone(o.APIServerFlags), tunedAPIServerFlags()...), auditFlags(o, dir, o.Out)...)
}

// ServingCertificate is the API server's serving certificate and key, for
// something that stands in its place on 127.0.0.1 (a fault proxy) and that
// clients should trust as they trust the API server.
func (c *ControlPlane) ServingCertificate() (tls.Certificate, error) {
	if c.dir == "" {
		return tls.Certificate{}, errors.New("the serving certificate is known once the control plane runs")
	}
	return tls.LoadX509KeyPair(filepath.Join(c.dir, "apiserver.crt"), filepath.Join(c.dir, "apiserver.key"))
}
