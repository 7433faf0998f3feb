package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// newRequest makes a PEM CSR from tmpl with a fresh P-256 key; tmpl's
// Subject defaults to the manager's.
func newRequest(t *testing.T, tmpl x509.CertificateRequest) []byte {
	t.Helper()
	key, _, err := NewKey()
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	if len(tmpl.Subject.Names) == 0 && tmpl.Subject.String() == "" {
		tmpl.Subject = pkix.Name{CommonName: testHost}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	if err != nil {
		t.Fatalf("CreateCertificateRequest: %v", err)
	}
	return encodePEM("CERTIFICATE REQUEST", der)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPolicyCheckApproval(t *testing.T) {
	valid := newTestCSR(t, []string{testHost, "localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	validSpec := func() certificatesv1.CertificateSigningRequestSpec {
		return certificatesv1.CertificateSigningRequestSpec{
			Request:    valid,
			SignerName: SignerName,
			Username:   testManager,
			Usages:     append([]certificatesv1.KeyUsage(nil), ServingUsages...),
		}
	}
	cases := []struct {
		name    string
		mutate  func(*certificatesv1.CertificateSigningRequestSpec)
		wantErr string
	}{
		{
			name:   "valid request",
			mutate: func(*certificatesv1.CertificateSigningRequestSpec) {},
		},
		{
			name: "usages in another order",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Usages = []certificatesv1.KeyUsage{
					certificatesv1.UsageServerAuth, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature,
				}
			},
		},
		{
			name:    "wrong signer",
			mutate:  func(s *certificatesv1.CertificateSigningRequestSpec) { s.SignerName = "kubernetes.io/kubelet-serving" },
			wantErr: `signer "kubernetes.io/kubelet-serving"`,
		},
		{
			name: "requester is not the manager",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Username = "system:serviceaccount:default:intruder"
			},
			wantErr: `requested by "system:serviceaccount:default:intruder", not by the manager`,
		},
		{
			name: "DNS name is not ours",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newTestCSR(t, []string{testHost, "evil.example.com"}, nil)
			},
			wantErr: "DNS name evil.example.com is not one of the webhook Service's names",
		},
		{
			name: "IP is not ours",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newTestCSR(t, []string{testHost}, []net.IP{net.ParseIP("10.1.2.3")})
			},
			wantErr: "IP 10.1.2.3 is not one of the allowed IPs",
		},
		{
			name: "usages miss server auth",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment}
			},
			wantErr: "are not exactly",
		},
		{
			name: "usages add client auth",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Usages = append(s.Usages, certificatesv1.UsageClientAuth)
			},
			wantErr: "are not exactly",
		},
		{
			name: "usages repeat one and miss another",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Usages = []certificatesv1.KeyUsage{
					certificatesv1.UsageServerAuth, certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature,
				}
			},
			wantErr: "are not exactly",
		},
		{
			name:    "request is not PEM",
			mutate:  func(s *certificatesv1.CertificateSigningRequestSpec) { s.Request = []byte("not a certificate request") },
			wantErr: "no PEM CERTIFICATE REQUEST",
		},
		{
			name:    "request names nothing",
			mutate:  func(s *certificatesv1.CertificateSigningRequestSpec) { s.Request = newTestCSR(t, nil, nil) },
			wantErr: "names no DNS name or IP",
		},
		{
			name:    "request signature is broken",
			mutate:  func(s *certificatesv1.CertificateSigningRequestSpec) { s.Request = brokenSignatureCSR(t) },
			wantErr: "signature does not verify",
		},
		{
			name:    "request names an e-mail address",
			mutate:  func(s *certificatesv1.CertificateSigningRequestSpec) { s.Request = newEmailCSR(t) },
			wantErr: "e-mail",
		},
		{
			name: "subject is not the manager's",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{Subject: pkix.Name{CommonName: "kubeharness-webhook"}, DNSNames: []string{testHost}})
			},
			wantErr: `subject "CN=kubeharness-webhook" is not "CN=` + testHost + `"`,
		},
		{
			// x509 leaves otherName out of the parsed names; the approval
			// would still cover it.
			name: "subjectAltName holds an otherName besides our DNS name",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{ExtraExtensions: []pkix.Extension{{Id: oidSubjectAltName, Value: sanValue(
					append([]byte{0x82, byte(len(testHost))}, testHost...),
					// otherName, type-id 1.2.3.4, value UTF8String "abc"
					[]byte{0xa0, 0x0c, 0x06, 0x03, 0x2a, 0x03, 0x04, 0xa0, 0x05, 0x0c, 0x03, 'a', 'b', 'c'},
				)}}})
			},
			wantErr: "subjectAltName holds otherName; only DNS names and IPs are issued",
		},
		{
			name: "subjectAltName holds a directoryName besides our DNS name",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{ExtraExtensions: []pkix.Extension{{Id: oidSubjectAltName, Value: sanValue(
					append([]byte{0x82, byte(len(testHost))}, testHost...),
					// directoryName CN=ca
					[]byte{0xa4, 0x0f, 0x30, 0x0d, 0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x02, 'c', 'a'},
				)}}})
			},
			wantErr: "subjectAltName holds directoryName",
		},
		{
			name: "subjectAltName has data after its names",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{ExtraExtensions: []pkix.Extension{{Id: oidSubjectAltName, Value: append(sanValue(
					append([]byte{0x82, byte(len(testHost))}, testHost...)), 0x82, 0x01, 'x')}}})
			},
			wantErr: "subjectAltName holds malformed data",
		},
	}
	p := testPolicy()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec()
			tc.mutate(&spec)
			checkErr(t, p.CheckApproval(spec), tc.wantErr)
		})
	}
}

// sanValue is a subjectAltName extension value: the DER GeneralNames
// given, in a SEQUENCE.
func sanValue(names ...[]byte) []byte {
	var content []byte
	for _, n := range names {
		content = append(content, n...)
	}
	return append([]byte{0x30, byte(len(content))}, content...)
}

// TestNewPolicyAcceptsTheManagersOwnRequest: what the issuer requests is
// what the approver approves and the signer signs, for every option set.
func TestNewPolicyAcceptsTheManagersOwnRequest(t *testing.T) {
	for _, o := range []Options{
		{},
		{Namespace: "ops", ServiceName: "hooks", ExtraDNSNames: []string{"localhost"}, ExtraIPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
		{CertDuration: 2 * MaxCertDuration},
	} {
		p := NewPolicy(o, testManager)
		key, _, err := NewKey()
		if err != nil {
			t.Fatal(err)
		}
		request, err := p.NewRequest(key)
		if err != nil {
			t.Fatal(err)
		}
		spec := certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: SignerName, Username: testManager, Usages: ServingUsages,
			ExpirationSeconds: ptr.To(int32(p.Lifetime(nil) / time.Second)),
		}
		if err := p.CheckApproval(spec); err != nil {
			t.Errorf("options %+v: the approver refuses the manager's own request: %v", o, err)
		}
		leaf, d, err := p.CheckSignable(spec)
		if err != nil {
			t.Fatalf("options %+v: the signer refuses the manager's own request: %v", o, err)
		}
		if diff := cmp.Diff(o.Defaulted().DNSNames(), leaf.DNSNames); diff != "" {
			t.Errorf("options %+v: DNS names (-want +got):\n%s", o, diff)
		}
		if want := min(o.Defaulted().CertDuration, MaxCertDuration); d != want {
			t.Errorf("options %+v: lifetime %s, want %s", o, d, want)
		}
	}
}

func TestPolicyLifetime(t *testing.T) {
	cases := []struct {
		name    string
		limit   time.Duration
		seconds *int32
		want    time.Duration
	}{
		{name: "unset", limit: 24 * time.Hour, seconds: nil, want: 24 * time.Hour},
		{name: "below minimum", limit: 24 * time.Hour, seconds: ptr.To[int32](60), want: MinCertDuration},
		{name: "at minimum", limit: 24 * time.Hour, seconds: ptr.To[int32](600), want: MinCertDuration},
		{name: "one hour", limit: 24 * time.Hour, seconds: ptr.To[int32](3600), want: time.Hour},
		{name: "a year is capped to the configured lifetime", limit: 24 * time.Hour, seconds: ptr.To[int32](365 * 24 * 3600), want: 24 * time.Hour},
		{name: "above maximum", limit: 2 * MaxCertDuration, seconds: ptr.To[int32](400 * 24 * 3600), want: MaxCertDuration},
		{name: "no limit configured", limit: 0, seconds: ptr.To[int32](365 * 24 * 3600), want: DefaultCertDuration},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{CertDuration: tc.limit}
			if diff := cmp.Diff(tc.want, p.Lifetime(tc.seconds)); diff != "" {
				t.Errorf("Lifetime mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// caSecretFor is the CA Secret the issuer keeps, holding ca.
func caSecretFor(ca *CA) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: CASecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{keyCert: ca.CertPEM, keyKey: ca.KeyPEM, keyCABundle: ca.CertPEM},
	}
}

// TestSignerPolicy runs approved requests through the signer's reconcile:
// approval does not widen what it signs. Whoever approved them, requests
// outside the policy are Failed with the reason and never get a
// certificate; the one it signs gets the policy's subject and lifetime.
func TestSignerPolicy(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ca := newTestCA(t, now.Add(-time.Hour), 365*24*time.Hour)
	p := testPolicy()
	service := []string{testHost, "kubeharness-webhook-service.kubeharness-system.svc.cluster.local"}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a weak key, on purpose
	if err != nil {
		t.Fatal(err)
	}
	weakKeyCSR, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: p.Subject(), DNSNames: service}, rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p224CSR, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: p.Subject(), DNSNames: service}, p224)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		// spec is changed from a valid request of the manager.
		mutate      func(*certificatesv1.CertificateSigningRequestSpec)
		wantReason  string
		wantMessage []string
		// wantLifetime, for issued certificates.
		wantLifetime time.Duration
	}{
		{
			name:         "the manager's own request",
			mutate:       func(*certificatesv1.CertificateSigningRequestSpec) {},
			wantLifetime: p.CertDuration,
		},
		{
			name:       "another requester",
			mutate:     func(s *certificatesv1.CertificateSigningRequestSpec) { s.Username = "tenant" },
			wantReason: ReasonPolicyViolation, wantMessage: []string{`requested by "tenant", not by the manager`},
		},
		{
			name: "extra DNS name kubernetes.default.svc",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{DNSNames: append(service, "kubernetes.default.svc")})
			},
			wantReason: ReasonPolicyViolation,
			wantMessage: []string{"DNS name kubernetes.default.svc is not one of the webhook Service's names [" + testHost +
				" kubeharness-webhook-service.kubeharness-system.svc.cluster.local localhost]"},
		},
		{
			name: "O=system:masters",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{
					Subject: pkix.Name{CommonName: testHost, Organization: []string{"system:masters"}}, DNSNames: service,
				})
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"O=system:masters", `is not "CN=` + testHost + `"`},
		},
		{
			name: "OU besides the CN",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{
					Subject: pkix.Name{CommonName: testHost, OrganizationalUnit: []string{"ops"}}, DNSNames: service,
				})
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"OU=ops"},
		},
		{
			name: "a tenant's request for the API server's name as system:masters",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Username = "tenant"
				s.Request = newRequest(t, x509.CertificateRequest{
					Subject:  pkix.Name{CommonName: "kubernetes.default.svc", Organization: []string{"system:masters"}},
					DNSNames: []string{"kubernetes.default.svc"},
				})
			},
			wantReason: ReasonPolicyViolation,
			wantMessage: []string{`requested by "tenant"`, "O=system:masters", "DNS name kubernetes.default.svc is not one of",
				"whoever approved it"},
		},
		{
			name: "client auth usage",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Usages = append(s.Usages, certificatesv1.UsageClientAuth)
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"are not exactly the serving usages"},
		},
		{
			name: "client auth instead of server auth",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"are not exactly the serving usages"},
		},
		{
			name: "expirationSeconds of a year is capped to the configured lifetime",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.ExpirationSeconds = ptr.To[int32](365 * 24 * 3600)
			},
			wantLifetime: p.CertDuration,
		},
		{
			name:         "a shorter expirationSeconds is honoured",
			mutate:       func(s *certificatesv1.CertificateSigningRequestSpec) { s.ExpirationSeconds = ptr.To[int32](3600) },
			wantLifetime: time.Hour,
		},
		{
			name: "e-mail SAN",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{DNSNames: service, EmailAddresses: []string{"admin@example.com"}})
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"e-mail addresses [admin@example.com]"},
		},
		{
			name: "URI SAN",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{DNSNames: service, URIs: []*url.URL{mustURL(t, "spiffe://cluster.local/ns/kube-system/sa/admin")}})
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"URIs [spiffe://cluster.local/ns/kube-system/sa/admin]"},
		},
		{
			name: "IP not allowed",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{DNSNames: service, IPAddresses: []net.IP{net.ParseIP("10.96.0.1")}})
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"IP 10.96.0.1 is not one of the allowed IPs"},
		},
		{
			name: "requested extension",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = newRequest(t, x509.CertificateRequest{DNSNames: service, ExtraExtensions: []pkix.Extension{
					{Id: []int{2, 5, 29, 19}, Critical: true, Value: []byte{0x30, 0x03, 0x01, 0x01, 0xff}}, // basicConstraints CA:TRUE
				}})
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"extension 2.5.29.19"},
		},
		{
			name: "weak RSA key",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = encodePEM("CERTIFICATE REQUEST", weakKeyCSR)
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"RSA key of 1024 bits"},
		},
		{
			name: "P-224 key",
			mutate: func(s *certificatesv1.CertificateSigningRequestSpec) {
				s.Request = encodePEM("CERTIFICATE REQUEST", p224CSR)
			},
			wantReason: ReasonPolicyViolation, wantMessage: []string{"ECDSA curve P-224"},
		},
		{
			name:       "malformed request",
			mutate:     func(s *certificatesv1.CertificateSigningRequestSpec) { s.Request = []byte("garbage") },
			wantReason: ReasonMalformedRequest, wantMessage: []string{"no PEM CERTIFICATE REQUEST"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "request"},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					Request:    newRequest(t, x509.CertificateRequest{DNSNames: service, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}),
					SignerName: SignerName, Username: testManager, Usages: append([]certificatesv1.KeyUsage(nil), ServingUsages...),
				},
			}
			tc.mutate(&csr.Spec)
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "ApprovedByAnyone",
			}}
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(csr, caSecretFor(ca)).
				WithStatusSubresource(&certificatesv1.CertificateSigningRequest{}).Build()
			s := &Signer{Client: c, Namespace: DefaultNamespace, Policy: p, Now: func() time.Time { return now }}
			if _, err := s.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: csr.Name}}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got := &certificatesv1.CertificateSigningRequest{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(csr), got); err != nil {
				t.Fatal(err)
			}
			var failed *certificatesv1.CertificateSigningRequestCondition
			for i, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateFailed {
					failed = &got.Status.Conditions[i]
				}
			}
			if tc.wantReason != "" {
				if len(got.Status.Certificate) > 0 {
					t.Errorf("signed a request outside the policy")
				}
				if failed == nil {
					t.Fatalf("not marked Failed; conditions %+v", got.Status.Conditions)
				}
				if failed.Reason != tc.wantReason || failed.Status != corev1.ConditionTrue {
					t.Errorf("Failed condition %s with reason %q, want True with %q", failed.Status, failed.Reason, tc.wantReason)
				}
				for _, m := range tc.wantMessage {
					checkErr(t, errString(failed.Message), m)
				}
				return
			}
			if failed != nil {
				t.Fatalf("marked Failed: %s: %s", failed.Reason, failed.Message)
			}
			leaf := parseOneCert(t, got.Status.Certificate)
			if diff := cmp.Diff(p.Subject().String(), leaf.Subject.String()); diff != "" {
				t.Errorf("subject (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(service, leaf.DNSNames); diff != "" {
				t.Errorf("DNS names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(now.Add(tc.wantLifetime), leaf.NotAfter); diff != "" {
				t.Errorf("NotAfter (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage); diff != "" {
				t.Errorf("extended key usages (-want +got):\n%s", diff)
			}
			if leaf.IsCA {
				t.Errorf("issued a CA certificate")
			}
		})
	}
}

// errString lets checkErr match a condition message.
type errString string

func (e errString) Error() string { return string(e) }
