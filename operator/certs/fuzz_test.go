package certs

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fuzzKeys are the keys requests are made with: the kinds the policy
// accepts and weak ones it must refuse. Each is made once per process, when
// first used, as making RSA keys takes long.
var fuzzKeys = []func() crypto.Signer{
	sync.OnceValue(func() crypto.Signer { return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)) }),
	sync.OnceValue(func() crypto.Signer { return must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)) }),
	sync.OnceValue(func() crypto.Signer { return must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader)) }),
	sync.OnceValue(func() crypto.Signer { return must(rsa.GenerateKey(rand.Reader, 2048)) }),
	sync.OnceValue(func() crypto.Signer { return must(rsa.GenerateKey(rand.Reader, 1024)) }), //nolint:gosec // the weak key the policy must refuse
	sync.OnceValue(func() crypto.Signer { _, k, err := ed25519.GenerateKey(rand.Reader); return must(k, err) }),
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fuzzScheme is the fake clients' scheme, made once, with only the types
// the approver and signer read: a fake client maps every type of its scheme
// when it is built, and it is built twice per input.
var fuzzScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(certificatesv1.AddToScheme(s))
	utilruntime.Must(corev1.AddToScheme(s))
	return s
})

// fuzzCA signs what the fuzzed requests get signed, from fuzzNow.
var (
	fuzzNow = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	fuzzCA  = sync.OnceValue(func() *CA {
		ca, err := NewCA(fuzzNow.Add(-time.Hour), DefaultCADuration)
		if err != nil {
			panic(err)
		}
		return ca
	})
)

// fuzzUsages are the usages a fuzzed request picks from, a byte each.
var fuzzUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCertSign, certificatesv1.UsageAny, "Server Auth",
}

// fuzzExtensions are the extensions a fuzzed request may ask for, with a
// fuzzed value: subjectAltName (any names, of any type), basicConstraints
// (a CA), keyUsage, extKeyUsage, nameConstraints and a private one.
var fuzzExtensions = []asn1.ObjectIdentifier{
	{2, 5, 29, 17}, {2, 5, 29, 19}, {2, 5, 29, 15}, {2, 5, 29, 37}, {2, 5, 29, 30}, {1, 3, 6, 1, 4, 1, 99999, 1},
}

// FuzzCSRPolicy sends requests of every shape through the approver's and
// the signer's policy and through their reconciles: arbitrary signers,
// requesters, usages and lifetimes, and CSRs with any subject, names,
// extension and key, or arbitrary bytes for spec.request. Approver and
// signer must agree, a refusal must say why, and whatever is approved and
// signed must keep the policy, checked here on the request's and the
// certificate's own bytes: the manager's identity and signer, exactly the
// serving usages, the subject the manager requests, only names the policy
// allows, no extension but subjectAltName, a strong key, and a serving
// certificate that is no CA, lasts no longer than allowed and carries
// nothing the request asked for beyond those names.
func FuzzCSRPolicy(f *testing.F) {
	// subjectAltName values as the fuzzer may mutate them: an allowed DNS
	// name, and the same with an otherName and a directoryName beside it.
	san := func(extra ...[]byte) []byte {
		return sanValue(append([][]byte{append([]byte{0x82, byte(len(testHost))}, testHost...)}, extra...)...)
	}
	otherName := []byte{0xa0, 0x0c, 0x06, 0x03, 0x2a, 0x03, 0x04, 0xa0, 0x05, 0x0c, 0x03, 'a', 'b', 'c'}
	dirName := []byte{0xa4, 0x0f, 0x30, 0x0d, 0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x02, 'c', 'a'}
	serving := []byte{0, 1, 2}
	for _, s := range []struct {
		signer, username string
		usages           []byte
		seconds          int32
		hasSeconds       bool
		certDuration     int64
		key              uint8
		cn, dns, ips     string
		emails, uris     string
		rawSubject       []byte
		ext              uint8
		extValue         []byte
		request          []byte
	}{
		{signer: SignerName, username: testManager, usages: serving, cn: testHost, dns: testHost + ",localhost", ips: "127.0.0.1"},
		{signer: SignerName, username: testManager, usages: serving, seconds: 600, hasSeconds: true, cn: testHost, dns: testHost},
		{signer: SignerName, username: testManager, usages: serving, seconds: -1, hasSeconds: true, certDuration: int64(time.Minute), key: 3, cn: testHost, dns: testHost},
		{signer: SignerName, username: testManager, usages: serving, seconds: 1 << 30, hasSeconds: true, certDuration: -1, key: 5, cn: testHost, ips: "127.0.0.1"},
		{signer: SignerName, username: testManager, usages: serving, cn: testHost, dns: testHost, ext: 0, extValue: san(otherName)},
		{signer: SignerName, username: testManager, usages: serving, cn: testHost, dns: testHost, ext: 0, extValue: san(dirName)},
		{signer: SignerName, username: testManager, usages: serving, cn: testHost, dns: testHost, ext: 1, extValue: []byte{0x30, 0x03, 0x01, 0x01, 0xff}},
		{signer: SignerName, username: testManager, usages: []byte{0, 1, 2, 2}, cn: testHost, dns: testHost},
		{signer: SignerName, username: testManager, usages: []byte{0, 3, 2}, cn: testHost, dns: testHost, key: 2},
		{signer: SignerName, username: testManager, usages: serving, cn: testHost, dns: "evil.example.com", ips: "10.0.0.1", emails: "a@b.c", uris: "spiffe://x/y", key: 4},
		{signer: SignerName, username: testManager, usages: serving, dns: testHost, rawSubject: []byte{0x30, 0x00}},
		{signer: SignerName, username: testManager, usages: serving, cn: testHost, dns: testHost,
			rawSubject: []byte{0x30, 0x1a, 0x31, 0x18, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x02, 'a', 'b', 0x30, 0x0b, 0x06, 0x03, 0x55, 0x04, 0x0a, 0x0c, 0x04, 'r', 'o', 'o', 't'}},
		{signer: "kubernetes.io/kube-apiserver-client", username: "system:anonymous", usages: []byte{3}, cn: "admin"},
		{signer: SignerName, username: testManager, usages: serving, request: []byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n")},
		{signer: SignerName, username: testManager, usages: serving, request: []byte("not PEM")},
	} {
		f.Add(s.signer, s.username, s.usages, s.seconds, s.hasSeconds, s.certDuration, s.key, s.cn, s.dns, s.ips, s.emails, s.uris, s.rawSubject, s.ext, s.extValue, s.request)
	}
	f.Fuzz(func(t *testing.T, signer, username string, usageBytes []byte, seconds int32, hasSeconds bool, certDuration int64,
		keyIndex uint8, cn, dns, ips, emails, uris string, rawSubject []byte, extIndex uint8, extValue, request []byte) {
		p := NewPolicy(Options{
			ExtraDNSNames: []string{"localhost"}, ExtraIPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
			CertDuration: time.Duration(certDuration),
		}, testManager)
		var key crypto.Signer
		if len(request) == 0 {
			key = fuzzKeys[int(keyIndex)%len(fuzzKeys)]()
			request = fuzzRequest(key, cn, dns, ips, emails, uris, rawSubject, extIndex, extValue)
			if request == nil {
				return
			}
		}
		spec := certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, Username: username}
		for _, b := range usageBytes {
			spec.Usages = append(spec.Usages, fuzzUsages[int(b)%len(fuzzUsages)])
		}
		if hasSeconds {
			spec.ExpirationSeconds = &seconds
		}

		approvalErr := p.CheckApproval(spec)
		leaf, lifetime, signErr := p.CheckSignable(spec)
		if (approvalErr == nil) != (signErr == nil) {
			t.Fatalf("approver and signer disagree: approval %v, signing %v", approvalErr, signErr)
		}
		approved, signed := reconcileCSR(t, p, spec)
		if approved != (approvalErr == nil) {
			t.Fatalf("the approver approved: %v; the policy: %v", approved, approvalErr)
		}
		if err := signErr; err != nil {
			var v *Violation
			if !errors.As(err, &v) || len(v.Problems) == 0 || strings.TrimSpace(v.Error()) == "" ||
				(v.Reason != ReasonPolicyViolation && v.Reason != ReasonMalformedRequest) {
				t.Fatalf("a refusal must be a *Violation saying why, with a reason: %#v", err)
			}
			if signed != nil {
				t.Fatalf("the signer issued a certificate for a request the policy refuses (%v)", err)
			}
			return
		}
		checkAllowedRequest(t, p, spec)
		csr, _ := ParseRequest(spec.Request)
		if leaf.Subject.String() != p.Subject().String() ||
			!slices.Equal(leaf.DNSNames, csr.DNSNames) || !slices.EqualFunc(leaf.IPs, csr.IPAddresses, net.IP.Equal) ||
			!publicKeysEqual(leaf.PublicKey, csr.PublicKey) {
			t.Fatalf("the leaf %+v is not the request's names and key under the policy's subject", leaf)
		}
		limit := p.CertDuration
		if limit <= 0 {
			limit = DefaultCertDuration
		}
		limit = min(limit, MaxCertDuration)
		if lifetime <= 0 || lifetime > limit || (spec.ExpirationSeconds == nil && lifetime != limit) ||
			(spec.ExpirationSeconds != nil && lifetime < min(MinCertDuration, limit)) {
			t.Fatalf("lifetime %s for expirationSeconds %v under a limit of %s", lifetime, spec.ExpirationSeconds, limit)
		}
		if signed == nil {
			t.Fatal("the signer issued no certificate for a request the policy allows")
		}
		checkServingCert(t, p, csr, signed, lifetime)
	})
}

// fuzzRequest is a PEM CSR signed by key with the given subject (rawSubject
// when not empty, else CN cn), names (comma-separated; IPs as 4- or
// 16-byte runs of ips) and extension value, nil when x509 refuses to make
// it.
func fuzzRequest(key crypto.Signer, cn, dns, ips, emails, uris string, rawSubject []byte, extIndex uint8, extValue []byte) []byte {
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}, RawSubject: rawSubject}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	tmpl.DNSNames, tmpl.EmailAddresses = split(dns), split(emails)
	for _, ip := range split(ips) {
		if parsed := net.ParseIP(ip); parsed != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, parsed)
		} else if len(ip) == net.IPv4len || len(ip) == net.IPv6len {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(ip))
		}
	}
	for _, u := range split(uris) {
		if parsed, err := url.Parse(u); err == nil {
			tmpl.URIs = append(tmpl.URIs, parsed)
		}
	}
	if len(extValue) > 0 {
		tmpl.ExtraExtensions = []pkix.Extension{{Id: fuzzExtensions[int(extIndex)%len(fuzzExtensions)], Value: extValue}}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// fuzzClients are the fake clients of the approver and of the signer (with
// the CA Secret), built once: building one maps every type of its scheme.
// Each input's requests get names of their own and are deleted after.
var fuzzClients = sync.OnceValues(func() (approver, signer client.Client) {
	approver = fake.NewClientBuilder().WithScheme(fuzzScheme()).Build()
	signer = fake.NewClientBuilder().WithScheme(fuzzScheme()).WithObjects(caSecretFor(fuzzCA())).
		WithStatusSubresource(&certificatesv1.CertificateSigningRequest{}).Build()
	return approver, signer
})

// fuzzRequests numbers the requests reconcileCSR makes.
var fuzzRequests atomic.Int64

// reconcileCSR runs the approver on a pending request with spec, and the
// signer on the same request approved by someone else, and returns whether
// the approver approved and the certificate the signer issued (nil for
// none). A request for the signer it does not sign must be marked Failed.
func reconcileCSR(t *testing.T, p Policy, spec certificatesv1.CertificateSigningRequestSpec) (approved bool, certificate []byte) {
	t.Helper()
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("fuzz"))
	key := types.NamespacedName{Name: fmt.Sprintf("fuzz-%d", fuzzRequests.Add(1))}
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Spec: spec}
	reconcile := func(c client.Client, obj *certificatesv1.CertificateSigningRequest, r interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}) *certificatesv1.CertificateSigningRequest {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Delete(ctx, obj) }()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("%T: %v", r, err)
		}
		got := &certificatesv1.CertificateSigningRequest{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	ac, sc := fuzzClients()
	got := reconcile(ac, csr.DeepCopy(), &Approver{Client: ac, Policy: p, Recorder: events.NewFakeRecorder(10)})
	approved = hasCondition(got, certificatesv1.CertificateApproved)

	byHand := withCondition(csr.DeepCopy(), certificatesv1.CertificateApproved)
	got = reconcile(sc, byHand, &Signer{Client: sc, Namespace: DefaultNamespace, Policy: p, Now: func() time.Time { return fuzzNow }})
	if spec.SignerName == SignerName && len(got.Status.Certificate) == 0 && !hasCondition(got, certificatesv1.CertificateFailed) {
		t.Fatalf("the signer neither signed nor failed an approved request: %+v", got.Status)
	}
	return approved, got.Status.Certificate
}

// checkAllowedRequest fails unless spec, which the policy allows, keeps
// the policy, read from the request's own bytes rather than through x509's
// reading of them.
func checkAllowedRequest(t *testing.T, p Policy, spec certificatesv1.CertificateSigningRequestSpec) {
	t.Helper()
	if spec.SignerName != SignerName || p.Username == "" || spec.Username != p.Username {
		t.Fatalf("allowed signer %q and requester %q", spec.SignerName, spec.Username)
	}
	usages := slices.Clone(spec.Usages)
	slices.Sort(usages)
	want := slices.Clone(ServingUsages)
	slices.Sort(want)
	if !slices.Equal(usages, want) {
		t.Fatalf("allowed usages %v, not exactly %v", spec.Usages, ServingUsages)
	}
	block, rest := pem.Decode(spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		t.Fatalf("allowed a request that is no PEM CSR (rest %q)", rest)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("allowed a request that does not parse or verify: %v", err)
	}
	var subject pkix.RDNSequence
	if rest, err := asn1.Unmarshal(csr.RawSubject, &subject); err != nil || len(rest) != 0 ||
		len(subject) != 1 || len(subject[0]) != 1 || !subject[0][0].Type.Equal(asn1.ObjectIdentifier{2, 5, 4, 3}) ||
		subject[0][0].Value != p.CommonName {
		t.Fatalf("allowed subject %q, not exactly CN=%s", csr.Subject, p.CommonName)
	}
	sans := 0
	for _, e := range csr.Extensions {
		if !e.Id.Equal(oidSubjectAltName) {
			t.Fatalf("allowed a request for extension %s", e.Id)
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(e.Value, &seq); err != nil || len(rest) != 0 || seq.Tag != asn1.TagSequence {
			t.Fatalf("allowed a malformed subjectAltName %x", e.Value)
		}
		for names := seq.Bytes; len(names) > 0; {
			var name asn1.RawValue
			var err error
			if names, err = asn1.Unmarshal(names, &name); err != nil {
				t.Fatalf("allowed a malformed subjectAltName %x: %v", e.Value, err)
			}
			sans++
			switch {
			case name.Class == asn1.ClassContextSpecific && name.Tag == 2:
				if !slices.Contains(p.DNSNames, string(name.Bytes)) {
					t.Fatalf("allowed DNS name %q", name.Bytes)
				}
			case name.Class == asn1.ClassContextSpecific && name.Tag == 7:
				if !slices.ContainsFunc(p.IPs, net.IP(name.Bytes).Equal) {
					t.Fatalf("allowed IP %v", net.IP(name.Bytes))
				}
			default:
				t.Fatalf("allowed a subjectAltName of class %d, tag %d: %x", name.Class, name.Tag, name.FullBytes)
			}
		}
	}
	if sans == 0 {
		t.Fatal("allowed a request naming nothing")
	}
	if err := checkKey(csr.PublicKey); err != nil {
		t.Fatalf("allowed a weak key: %v", err)
	}
}

// checkServingCert fails unless certPEM, signed for csr, is a serving
// certificate the policy allows, valid for lifetime.
func checkServingCert(t *testing.T, p Policy, csr *x509.CertificateRequest, certPEM []byte, lifetime time.Duration) {
	t.Helper()
	certs, err := ParseCertificates(certPEM)
	if err != nil || len(certs) != 1 {
		t.Fatalf("the signer issued %d certificates (%v)", len(certs), err)
	}
	cert := certs[0]
	wantSubject, _ := asn1.Marshal(p.Subject().ToRDNSequence())
	switch {
	case cert.IsCA || cert.BasicConstraintsValid:
		t.Fatal("issued a CA certificate")
	case cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment:
		t.Fatalf("issued key usage %b", cert.KeyUsage)
	case !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || len(cert.UnknownExtKeyUsage) > 0:
		t.Fatalf("issued extended key usages %v %v", cert.ExtKeyUsage, cert.UnknownExtKeyUsage)
	case !bytes.Equal(cert.RawSubject, wantSubject):
		t.Fatalf("issued subject %q", cert.Subject)
	case len(cert.EmailAddresses) > 0 || len(cert.URIs) > 0 || len(cert.PermittedDNSDomains) > 0 || len(cert.ExcludedDNSDomains) > 0:
		t.Fatal("issued names beyond DNS names and IPs, or name constraints")
	case !publicKeysEqual(cert.PublicKey, csr.PublicKey):
		t.Fatal("issued for another key than the request's")
	case cert.NotAfter.Sub(cert.NotBefore) > lifetime+5*time.Minute || cert.NotAfter.After(fuzzCA().Cert.NotAfter):
		t.Fatalf("issued from %s to %s, longer than %s", cert.NotBefore, cert.NotAfter, lifetime)
	}
	for _, n := range cert.DNSNames {
		if !slices.Contains(p.DNSNames, n) {
			t.Fatalf("issued DNS name %q", n)
		}
	}
	for _, ip := range cert.IPAddresses {
		if !slices.ContainsFunc(p.IPs, ip.Equal) {
			t.Fatalf("issued IP %v", ip)
		}
	}
	allowed := []asn1.ObjectIdentifier{{2, 5, 29, 15}, {2, 5, 29, 37}, {2, 5, 29, 17}, {2, 5, 29, 35}}
	for _, e := range cert.Extensions {
		if !slices.ContainsFunc(allowed, e.Id.Equal) {
			t.Fatalf("issued extension %s", e.Id)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(fuzzCA().Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: fuzzNow, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("the issued certificate does not chain to the CA: %v", err)
	}
}
