package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// ServingUsages are the usages a serving certificate request must ask for,
// exactly.
var ServingUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
}

// Condition reasons the signer gives when it marks a request Failed.
const (
	// ReasonMalformedRequest: spec.request does not decode or its
	// signature does not verify.
	ReasonMalformedRequest = "MalformedRequest"
	// ReasonPolicyViolation: the request asks for something the signer's
	// policy does not issue, whoever approved it.
	ReasonPolicyViolation = "PolicyViolation"
)

// Policy is what the manager's approver approves and, independently of who
// approved a request, what its signer signs: requests to SignerName from the
// manager's own identity, for exactly the serving usages, whose subject is
// exactly the one the manager's own requests carry (CN only), naming only
// the webhook Service's DNS names and the configured extra hosts, for at
// most CertDuration. The issuer builds the manager's requests from the same
// Policy, so the three cannot disagree.
type Policy struct {
	// Username is the manager's identity, the only requester.
	Username string
	// CommonName is the only subject attribute requested and issued.
	CommonName string
	// DNSNames and IPs are the names a certificate may carry.
	DNSNames []string
	IPs      []net.IP
	// CertDuration is the lifetime issued when a request asks for none,
	// and the most issued when it asks for more.
	CertDuration time.Duration
}

// NewPolicy is the policy for the manager running as username with o.
func NewPolicy(o Options, username string) Policy {
	o = o.Defaulted()
	names := o.DNSNames()
	return Policy{
		Username: username, CommonName: names[0], DNSNames: names, IPs: o.ExtraIPs,
		CertDuration: min(o.CertDuration, MaxCertDuration),
	}
}

// Subject is the subject of the manager's requests and of every
// certificate the signer issues.
func (p Policy) Subject() pkix.Name { return pkix.Name{CommonName: p.CommonName} }

// NewRequest makes the manager's own PEM certificate request for key.
func (p Policy) NewRequest(key crypto.Signer) ([]byte, error) {
	return NewCSR(key, p.CommonName, p.DNSNames, p.IPs)
}

// Violation says why a request may not be approved or signed: every
// problem found, and the condition reason the signer fails it with.
type Violation struct {
	Reason   string
	Problems []string
}

func (v *Violation) Error() string { return strings.Join(v.Problems, "; ") }

// CheckApproval returns nil when spec may be approved under p, or a
// *Violation saying why not.
func (p Policy) CheckApproval(spec certificatesv1.CertificateSigningRequestSpec) error {
	_, err := p.check(spec)
	return err
}

// CheckSignable returns what to issue for an approved request and for how
// long, or a *Violation saying why it must not be signed (the signer marks
// it Failed). Approval does not widen the policy: an approver may approve
// anything, the signer still issues only what the manager would request.
func (p Policy) CheckSignable(spec certificatesv1.CertificateSigningRequestSpec) (Leaf, time.Duration, error) {
	csr, err := p.check(spec)
	if err != nil {
		return Leaf{}, 0, err
	}
	return Leaf{
		Subject:   p.Subject(),
		DNSNames:  slices.Clone(csr.DNSNames),
		IPs:       slices.Clone(csr.IPAddresses),
		PublicKey: csr.PublicKey,
	}, p.Lifetime(spec.ExpirationSeconds), nil
}

// Lifetime is what is issued for expirationSeconds: CertDuration when
// unset, else the request clamped to [MinCertDuration, CertDuration].
func (p Policy) Lifetime(expirationSeconds *int32) time.Duration {
	limit := p.CertDuration
	if limit <= 0 {
		limit = DefaultCertDuration
	}
	limit = min(limit, MaxCertDuration)
	if expirationSeconds == nil {
		return limit
	}
	d := time.Duration(*expirationSeconds) * time.Second
	return min(max(d, MinCertDuration), limit)
}

// oidSubjectAltName is the one extension a request may ask for.
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// check returns the parsed request, or a *Violation listing every problem.
func (p Policy) check(spec certificatesv1.CertificateSigningRequestSpec) (*x509.CertificateRequest, error) {
	v := &Violation{Reason: ReasonPolicyViolation}
	add := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	if spec.SignerName != SignerName {
		add("signer %q is not %s", spec.SignerName, SignerName)
	}
	switch {
	case p.Username == "":
		add("the manager's identity is unknown, so no requester is allowed")
	case spec.Username != p.Username:
		add("requested by %q, not by the manager (%q)", spec.Username, p.Username)
	}
	if !sameUsages(spec.Usages, ServingUsages) {
		add("usages %v are not exactly the serving usages %v", spec.Usages, ServingUsages)
	}
	csr, err := ParseRequest(spec.Request)
	if err != nil {
		v.Reason = ReasonMalformedRequest
		add("%v", err)
		return nil, v
	}
	if want := p.Subject(); !subjectIs(csr.Subject, want) {
		add("subject %q is not %q: only the subject the manager's own requests carry is issued", csr.Subject.String(), want.String())
	}
	if len(csr.EmailAddresses) > 0 {
		add("request names e-mail addresses %v; only DNS names and IPs are issued", csr.EmailAddresses)
	}
	if len(csr.URIs) > 0 {
		uris := make([]string, len(csr.URIs))
		for i, u := range csr.URIs {
			uris[i] = u.String()
		}
		add("request names URIs %v; only DNS names and IPs are issued", uris)
	}
	if other := unreadNames(csr); len(other) > 0 {
		add("request's subjectAltName holds %s; only DNS names and IPs are issued", strings.Join(other, ", "))
	}
	if len(csr.DNSNames) == 0 && len(csr.IPAddresses) == 0 {
		add("request names no DNS name or IP")
	}
	for _, n := range csr.DNSNames {
		if !slices.Contains(p.DNSNames, n) {
			add("DNS name %s is not one of the webhook Service's names %v", n, p.DNSNames)
		}
	}
	for _, ip := range csr.IPAddresses {
		if !slices.ContainsFunc(p.IPs, ip.Equal) {
			add("IP %s is not one of the allowed IPs %v", ip, p.IPs)
		}
	}
	for _, e := range csr.Extensions {
		if !e.Id.Equal(oidSubjectAltName) {
			add("request asks for extension %s; only subjectAltName is honoured", e.Id)
		}
	}
	if err := checkKey(csr.PublicKey); err != nil {
		add("%v", err)
	}
	if len(v.Problems) > 0 {
		return nil, v
	}
	return csr, nil
}

// sanTypes names the subjectAltName types (RFC 5280 GeneralName tags) that
// x509 leaves out of a parsed request's names without a word.
var sanTypes = map[int]string{0: "otherName", 3: "x400Address", 4: "directoryName", 5: "ediPartyName", 8: "registeredID"}

// unreadNames lists the types of the names in csr's subjectAltName that its
// DNSNames, EmailAddresses, IPAddresses and URIs do not hold, and anything
// else in the extension that is not a name. An approval covers the whole
// request, so what x509 skips must not slip past the policy.
func unreadNames(csr *x509.CertificateRequest) []string {
	var other []string
	for _, e := range csr.Extensions {
		if !e.Id.Equal(oidSubjectAltName) {
			continue
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(e.Value, &seq); err != nil || len(rest) != 0 || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence {
			return append(other, "malformed data")
		}
		for names := seq.Bytes; len(names) > 0; {
			var n asn1.RawValue
			var err error
			if names, err = asn1.Unmarshal(names, &n); err != nil {
				return append(other, "malformed data")
			}
			switch {
			case n.Class != asn1.ClassContextSpecific:
				other = append(other, "malformed data")
			case n.Tag == 1, n.Tag == 2, n.Tag == 6, n.Tag == 7:
				// e-mail, DNS, URI and IP: x509 reads them
			case sanTypes[n.Tag] != "":
				other = append(other, sanTypes[n.Tag])
			default:
				other = append(other, fmt.Sprintf("a name of unknown type %d", n.Tag))
			}
		}
	}
	return other
}

// subjectIs reports whether got has exactly the attributes of want (a
// CommonName only): any O, OU or other attribute makes it differ.
func subjectIs(got, want pkix.Name) bool {
	oidCommonName := asn1.ObjectIdentifier{2, 5, 4, 3}
	return len(got.Names) == 1 && got.Names[0].Type.Equal(oidCommonName) &&
		got.Names[0].Value == want.CommonName && len(got.ExtraNames) == 0
}

// checkKey refuses keys too weak to serve with.
func checkKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() && k.Curve != elliptic.P521() {
			return fmt.Errorf("ECDSA curve %s is not P-256, P-384 or P-521", k.Curve.Params().Name)
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits is shorter than 2048", k.N.BitLen())
		}
	case ed25519.PublicKey:
	default:
		return fmt.Errorf("public key type %T is not ECDSA, RSA or Ed25519", pub)
	}
	return nil
}

// sameUsages reports whether a and b hold the same usages, each once.
func sameUsages(a, b []certificatesv1.KeyUsage) bool {
	if len(a) != len(b) {
		return false
	}
	for _, u := range a {
		if !slices.Contains(b, u) {
			return false
		}
	}
	for _, u := range b {
		if !slices.Contains(a, u) {
			return false
		}
	}
	return true
}
