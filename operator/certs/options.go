package certs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"time"
)

// Options configure the certificate path.
type Options struct {
	// Namespace holds the CA and serving Secrets and the webhook Service.
	Namespace string
	// ServiceName is the webhook Service; its cluster DNS names go into the
	// serving certificate.
	ServiceName string
	// ExtraDNSNames and ExtraIPs are added to the serving certificate, for
	// API servers that reach the webhook by URL (envtest: 127.0.0.1).
	ExtraDNSNames []string
	ExtraIPs      []net.IP
	// CertDuration is the lifetime asked for in expirationSeconds, and the
	// most the signer issues whatever a request asks for.
	CertDuration time.Duration
	// CADuration is the lifetime of a new CA.
	CADuration time.Duration
	// RotationSettle is how long a CA rotation keeps the old CA published
	// after the serving certificate switched, so every replica has reloaded
	// it before the old CA stops being trusted.
	RotationSettle time.Duration
	// ForbiddenRetry is how often an approval or caBundle injection the
	// API server refused for lack of permission is tried again: at a steady
	// pace, since an RBAC fix takes effect at once and exponential backoff
	// would hide it for minutes.
	ForbiddenRetry time.Duration
	// Canary, when set, must pass before the manager reports ready: the
	// manager sends an AdmissionReview to its own webhook server, trusting
	// only the caBundle of the live webhook configuration. A function is of
	// the process that made it, so Options cross a process boundary as JSON
	// without it.
	Canary func() error `json:"-"`
}

// Defaulted fills in unset options.
func (o Options) Defaulted() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.CertDuration == 0 {
		o.CertDuration = DefaultCertDuration
	}
	if o.CADuration == 0 {
		o.CADuration = DefaultCADuration
	}
	if o.RotationSettle == 0 {
		o.RotationSettle = DefaultRotationSettle
	}
	if o.ForbiddenRetry == 0 {
		o.ForbiddenRetry = DefaultForbiddenRetry
	}
	return o
}

// DNSNames are the names the serving certificate is issued for.
func (o Options) DNSNames() []string {
	names := []string{
		fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", o.ServiceName, o.Namespace),
	}
	return append(names, o.ExtraDNSNames...)
}

// Hosts are the names the serving certificate must be valid for: its DNS
// names and its extra IPs.
func (o Options) Hosts() []string {
	hosts := o.DNSNames()
	for _, ip := range o.ExtraIPs {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// CSRName is the deterministic name of the manager's CertificateSigningRequest:
// a restarted manager finds its own request instead of piling up new ones.
func (o Options) CSRName() string {
	sum := sha256.Sum256([]byte(o.Namespace + "/" + o.ServiceName))
	return "kubeharness-webhook-serving-" + hex.EncodeToString(sum[:])[:10]
}

// fallbackCSRSuffix makes the second name the manager requests under.
const fallbackCSRSuffix = "-fallback"

// CSRNames are the names the manager requests its certificate under, in
// order: CSRName, then a fallback for when a CertificateSigningRequest of
// another requester holds CSRName. The manager never deletes a request it
// did not create, so it may delete only these (config/rbac).
func (o Options) CSRNames() []string {
	return []string{o.CSRName(), o.CSRName() + fallbackCSRSuffix}
}
