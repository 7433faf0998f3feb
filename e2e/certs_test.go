package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/scheme"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// csrFixture is one entry of fixtures/certs/csrs.yaml.
type csrFixture struct {
	Name              string   `json:"name"`
	SignerName        string   `json:"signerName"`
	Requester         string   `json:"requester"`
	DNSNames          []string `json:"dnsNames"`
	IPs               []string `json:"ips"`
	Usages            []string `json:"usages"`
	ExpirationSeconds *int32   `json:"expirationSeconds"`
	CommonName        string   `json:"commonName"`
	Organization      []string `json:"organization"`
	Decision          string   `json:"decision"`
	Expect            string   `json:"expect"`
	Reason            string   `json:"reason"`
	Message           string   `json:"message"`
	Lifetime          string   `json:"lifetime"`
}

// newRequest makes a PEM certificate request for subject, dnsNames and
// ips with a fresh key.
func newRequest(subject pkix.Name, dnsNames []string, ips []net.IP) []byte {
	GinkgoHelper()
	key, _, err := certs.NewKey()
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames, IPAddresses: ips}, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// tenant grants user the rules cluster-wide for the rest of the spec and
// returns a client acting as that user.
func tenant(ctx context.Context, user string, rules []rbacv1.PolicyRule) client.Client {
	GinkgoHelper()
	t, err := operatortest.NewTenant(ctx, cluster.Client, cluster.Config, scheme.New(), "", user, rules...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(t.Revoke)
	return t.Client
}

// readyz GETs the manager's /readyz?verbose.
func readyz() (int, string, error) {
	resp, err := http.Get("http://" + cluster.ProbeAddr + "/readyz?verbose")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// webhookFixture is the configuration named name in fixtures/certs/webhooks.yaml.
func webhookFixture(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	GinkgoHelper()
	root, err := repo.Root()
	Expect(err).NotTo(HaveOccurred())
	objs, err := deploy.RenderFile(filepath.Join(root, "fixtures", "certs", "webhooks.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, u := range objs {
		if u.GetName() == name {
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			Expect(deploy.FromUnstructured(u, v)).To(Succeed())
			return v
		}
	}
	Fail("fixtures/certs/webhooks.yaml has no " + name)
	return nil
}

func loadFixture(name string, into any) {
	root, err := repo.Root()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "fixtures", "certs", name))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(data, into)).To(Succeed(), "fixtures/certs/%s", name)
}

var _ = Describe("webhook serving certificates", labelCerts, func() {
	ns := specNamespace("certs")
	var o certs.Options
	var managerClient client.Client

	BeforeEach(func() {
		o = cluster.CertOptions
		var err error
		managerClient, err = client.New(deploy.ImpersonateManager(cluster.Config), client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
	})

	secret := func(g Gomega, ctx context.Context, name string) *corev1.Secret {
		s := &corev1.Secret{}
		g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: name}, s)).To(Succeed())
		return s
	}
	// requestRotation annotates the CA Secret to force a CA rotation and
	// returns the value the manager records once the rotation finished.
	requestRotation := func(ctx context.Context) string {
		GinkgoHelper()
		caSecret := secret(Default, ctx, certs.CASecretName)
		requested := time.Now().UTC().Format(time.RFC3339Nano)
		patch := client.MergeFrom(caSecret.DeepCopy())
		if caSecret.Annotations == nil {
			caSecret.Annotations = map[string]string{}
		}
		caSecret.Annotations[certs.RotateAnnotation] = requested
		Expect(cluster.Client.Patch(ctx, caSecret, patch)).To(Succeed())
		return requested
	}
	published := func(g Gomega, ctx context.Context) []byte {
		return secret(g, ctx, certs.CASecretName).Data["ca.crt"]
	}
	injectedBundles := func(g Gomega, ctx context.Context) [][]byte {
		var out [][]byte
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: certs.MutatingWebhookConfigurationName}, m)).To(Succeed())
		for _, w := range m.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: certs.ValidatingWebhookConfigurationName}, v)).To(Succeed())
		for _, w := range v.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
		return out
	}
	// handshake dials the webhook server trusting only bundle and returns
	// the certificate it served.
	handshake := func(bundle []byte) (*x509.Certificate, error) {
		state, err := dialWebhook(bundle)
		if err != nil {
			return nil, err
		}
		return state.PeerCertificates[0], nil
	}

	It("issues the serving certificate through an Approved, Issued CertificateSigningRequest from the manager", func(ctx SpecContext) {
		csr := &certificatesv1.CertificateSigningRequest{}
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: o.CSRName()}, csr)).To(Succeed())
			g.Expect(csr.Status.Certificate).NotTo(BeEmpty())
		}).Should(Succeed())
		Expect(csr.Spec.SignerName).To(Equal(certs.SignerName))
		Expect(csr.Spec.Username).To(Equal(deploy.ManagerUser()))
		Expect(csr.Spec.ExpirationSeconds).NotTo(BeNil())
		Expect(csr.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", certificatesv1.CertificateApproved), HaveField("Status", corev1.ConditionTrue))))
		req, err := certs.ParseRequest(csr.Spec.Request)
		Expect(err).NotTo(HaveOccurred())
		Expect(req.DNSNames).To(ContainElements(
			fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace), fmt.Sprintf("%s.%s.svc.cluster.local", o.ServiceName, o.Namespace)))

		By("storing the issued chain and its key in the serving Secret")
		s := secret(Default, ctx, certs.ServingSecretName)
		Expect(s.Type).To(Equal(corev1.SecretTypeTLS))
		_, err = tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
		Expect(err).NotTo(HaveOccurred())
		Expect(certs.VerifyServing(s.Data["tls.crt"], published(Default, ctx), fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace), time.Now())).To(Succeed())
	})

	It("serves a certificate that verifies against the injected caBundle in a real TLS handshake", func(ctx SpecContext) {
		var bundles [][]byte
		Eventually(func(g Gomega) {
			bundles = injectedBundles(g, ctx)
			g.Expect(bundles).NotTo(BeEmpty())
			for _, b := range bundles {
				g.Expect(b).To(Equal(published(g, ctx)))
			}
		}).Should(Succeed())
		served, err := handshake(bundles[0])
		Expect(err).NotTo(HaveOccurred(), "a TLS client trusting only caBundle must accept the webhook server")
		stored := secret(Default, ctx, certs.ServingSecretName)
		storedCerts, err := certs.ParseCertificates(stored.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		Expect(served.Equal(storedCerts[0])).To(BeTrue(), "the server serves the certificate stored in the Secret")

		By("over TLS 1.2 or newer, without HTTP/2")
		state, err := dialWebhook(bundles[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(state.Version).To(BeNumerically(">=", tls.VersionTLS12))
		Expect(state.NegotiatedProtocol).NotTo(Equal("h2"), "HTTP/2 must be off (rapid-reset and stream-cancellation CVEs)")

		By("and a client trusting another CA is refused")
		other, err := certs.NewCA(time.Now(), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		_, err = handshake(other.CertPEM)
		Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	})

	It("reports ready only with the certificate served, injected and a canary admitted", func(ctx SpecContext) {
		if cluster.ProbeAddr == "" {
			Skip("the manager's probe address is not reachable on " + cluster.Provider)
		}
		Eventually(func(g Gomega) {
			code, body, err := readyz()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusOK), "%s", body)
			g.Expect(body).To(ContainSubstring("[+]certificates ok"))
		}).Should(Succeed())
	})

	It("renews a serving certificate that is two thirds into its lifetime", Serial, func(ctx SpecContext) {
		caSecret := secret(Default, ctx, certs.CASecretName)
		ca, err := certs.ParseCA(caSecret.Data["tls.crt"], caSecret.Data["tls.key"], time.Now())
		Expect(err).NotTo(HaveOccurred())
		key, keyPEM, err := certs.NewKey()
		Expect(err).NotTo(HaveOccurred())
		By("storing a certificate issued 20 of its 24 hours ago")
		leaf := certs.Leaf{Subject: pkix.Name{CommonName: o.DNSNames()[0]}, DNSNames: o.DNSNames(), IPs: o.ExtraIPs, PublicKey: key.Public()}
		due, err := ca.Sign(leaf, 24*time.Hour, time.Now().Add(-20*time.Hour))
		Expect(err).NotTo(HaveOccurred())
		serving := secret(Default, ctx, certs.ServingSecretName)
		serving.Data["tls.crt"], serving.Data["tls.key"] = due, keyPEM
		Expect(cluster.Client.Update(ctx, serving)).To(Succeed())

		Eventually(func(g Gomega) {
			s := secret(g, ctx, certs.ServingSecretName)
			issued, err := certs.ParseCertificates(s.Data["tls.crt"])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(issued[0].NotBefore).To(BeTemporally(">", time.Now().Add(-time.Hour)), "not renewed yet")
			served, err := handshake(published(g, ctx))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(served.Equal(issued[0])).To(BeTrue(), "the renewed certificate is not served yet")
		}).Should(Succeed())
	})

	It("refuses an unusable CA Secret with an explanation instead of replacing it", Serial, func(ctx SpecContext) {
		caSecret := secret(Default, ctx, certs.CASecretName)
		original := caSecret.DeepCopy()
		DeferCleanup(func(ctx context.Context) {
			cur := secret(Default, ctx, certs.CASecretName)
			cur.Data = original.Data
			Expect(cluster.Client.Update(ctx, cur)).To(Succeed())
		})
		other, err := certs.NewCA(time.Now(), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		caSecret.Data["tls.key"] = other.KeyPEM
		Expect(cluster.Client.Update(ctx, caSecret)).To(Succeed())
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(cluster.Client.List(ctx, events, client.InNamespace(o.Namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Reason", certs.ReasonCAUnusable),
				HaveField("Message", SatisfyAll(ContainSubstring("tls.key does not belong"), ContainSubstring("delete it"))),
			)))
		}).Should(Succeed())
		Expect(secret(Default, ctx, certs.CASecretName).Data["tls.key"]).To(Equal(other.KeyPEM), "the manager must not overwrite a CA it cannot use")
	})

	It("puts a tampered caBundle back within seconds", Serial, func(ctx SpecContext) {
		want := published(Default, ctx)
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: certs.ValidatingWebhookConfigurationName}, v)).To(Succeed())
		tampered := v.DeepCopy()
		for i := range tampered.Webhooks {
			tampered.Webhooks[i].ClientConfig.CABundle = []byte("-----BEGIN CERTIFICATE-----\ntampered\n-----END CERTIFICATE-----\n")
		}
		Expect(cluster.Client.Update(ctx, tampered)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(v), v)).To(Succeed())
			for _, w := range v.Webhooks {
				g.Expect(w.ClientConfig.CABundle).To(Equal(want))
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("injects into annotated configurations it may patch and never touches unannotated ones", labelSlow, func(ctx SpecContext) {
		annotated, unannotated := webhookFixture("kubeharness-fixture-annotated"), webhookFixture("kubeharness-fixture-unannotated")

		By("granting the manager patch on the annotated fixture, as a user extending config/rbac would")
		grant := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeharness-fixture-inject-" + *ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
				ResourceNames: []string{annotated.Name}, Verbs: []string{"patch"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: grant.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: grant.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: deploy.ManagerServiceAccount, Namespace: o.Namespace}},
		}
		for _, obj := range []client.Object{grant, binding, annotated, unannotated} {
			Expect(cluster.Client.Create(ctx, obj)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, obj))).To(Succeed())
			})
		}
		want := published(Default, ctx)
		Eventually(func(g Gomega) {
			got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(annotated), got)).To(Succeed())
			g.Expect(got.Webhooks[0].ClientConfig.CABundle).To(Equal(want))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(unannotated), got)).To(Succeed())
			g.Expect(got.Webhooks[0].ClientConfig.CABundle).To(BeEmpty())
			g.Expect(got.ManagedFields).NotTo(ContainElement(HaveField("Manager", certs.FieldManager)))
		}).WithTimeout(operatortest.AfterDecision).Should(Succeed())
	})

	Context("certificate request fixtures", labelSlow, func() {
		var fixtures []csrFixture
		loadFixture("csrs.yaml", &fixtures)
		for _, f := range fixtures {
			It(fmt.Sprintf("gives %s the outcome %s", f.Name, f.Expect), func(ctx SpecContext) {
				var dns []string
				for _, n := range f.DNSNames {
					if n == "service" {
						dns = append(dns, o.DNSNames()[:2]...)
						continue
					}
					dns = append(dns, n)
				}
				var ips []net.IP
				for _, s := range f.IPs {
					if s == "extra" {
						ips = append(ips, o.ExtraIPs...)
						continue
					}
					ips = append(ips, net.ParseIP(s))
				}
				subject := pkix.Name{CommonName: o.DNSNames()[0], Organization: f.Organization}
				if f.CommonName != "" {
					subject.CommonName = f.CommonName
				}
				request := newRequest(subject, dns, ips)
				csr := &certificatesv1.CertificateSigningRequest{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fixture-%s-%s", f.Name, *ns)},
					Spec: certificatesv1.CertificateSigningRequestSpec{
						Request: request, SignerName: f.SignerName, ExpirationSeconds: f.ExpirationSeconds,
					},
				}
				for _, u := range f.Usages {
					csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.KeyUsage(u))
				}
				creator := cluster.Client
				if f.Requester == "manager" {
					creator = managerClient
				}
				Expect(creator.Create(ctx, csr)).To(Succeed())
				DeferCleanup(func(ctx context.Context) {
					Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, csr))).To(Succeed())
				})

				if f.Decision != "" {
					decided := csr.DeepCopy()
					cond := certificatesv1.CertificateSigningRequestCondition{Status: corev1.ConditionTrue, Reason: "FixtureDecision", Message: "decided by the certs fixture"}
					cond.Type = certificatesv1.CertificateApproved
					if f.Decision == "deny" {
						cond.Type = certificatesv1.CertificateDenied
					}
					decided.Status.Conditions = append(decided.Status.Conditions, cond)
					Expect(cluster.Client.SubResource("approval").Update(ctx, decided)).To(Succeed())
				}

				get := func(g Gomega) *certificatesv1.CertificateSigningRequest {
					cur := &certificatesv1.CertificateSigningRequest{}
					g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(csr), cur)).To(Succeed())
					return cur
				}
				approvedByManager := HaveField("Status.Conditions", ContainElement(SatisfyAll(
					HaveField("Type", certificatesv1.CertificateApproved), HaveField("Reason", "KubeharnessAutoApproved"))))
				switch f.Expect {
				case "issued":
					Eventually(func(g Gomega) {
						cur := get(g)
						g.Expect(cur).To(approvedByManager)
						g.Expect(cur.Status.Certificate).NotTo(BeEmpty())
						issued, err := certs.ParseCertificates(cur.Status.Certificate)
						g.Expect(err).NotTo(HaveOccurred())
						life := issued[0].NotAfter.Sub(issued[0].NotBefore)
						switch {
						case f.Lifetime == "certDuration":
							g.Expect(life).To(BeNumerically("~", o.CertDuration, 10*time.Minute), "the signer issues at most the configured lifetime")
						case f.Lifetime != "":
							Fail("fixtures/certs/csrs.yaml: unknown lifetime " + f.Lifetime)
						case f.ExpirationSeconds != nil:
							g.Expect(life).To(BeNumerically("~", time.Duration(*f.ExpirationSeconds)*time.Second, 10*time.Minute))
						}
						g.Expect(issued[0].Subject.String()).To(Equal("CN="+o.DNSNames()[0]), "the subject comes from the signer's policy")
					}).Should(Succeed())
				case "untouched", "denied":
					Consistently(func(g Gomega) {
						cur := get(g)
						g.Expect(cur).NotTo(approvedByManager)
						g.Expect(cur.Status.Certificate).To(BeEmpty())
						if f.Expect == "denied" {
							g.Expect(cur.Status.Conditions).To(ContainElement(HaveField("Type", certificatesv1.CertificateDenied)))
						}
					}).WithTimeout(operatortest.Unnoticed).Should(Succeed())
				case "failed":
					Eventually(func(g Gomega) {
						cur := get(g)
						g.Expect(cur.Status.Conditions).To(ContainElement(SatisfyAll(
							HaveField("Type", certificatesv1.CertificateFailed), HaveField("Reason", f.Reason),
							HaveField("Message", SatisfyAll(Not(BeEmpty()), ContainSubstring(f.Message))))))
						g.Expect(cur.Status.Certificate).To(BeEmpty())
					}).Should(Succeed())
				default:
					Fail("fixtures/certs/csrs.yaml: unknown expect " + f.Expect)
				}
			})
		}
	})

	It("rotates the CA while at least 500 admission requests all succeed", labelSlow, Serial, labelRotation, func(ctx SpecContext) {
		caSecret := secret(Default, ctx, certs.CASecretName)
		oldCA, err := certs.ParseCertificates(caSecret.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		oldServing := secret(Default, ctx, certs.ServingSecretName).Data["tls.crt"]

		var ok, failed atomic.Int64
		var firstErr atomic.Value
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					pb := MakePlaybook(fmt.Sprintf("rotation-%d-%d", w, i), *ns).Abstract(" during rotation ").Obj()
					if err := cluster.Client.Create(ctx, pb, client.DryRunAll); err != nil || pb.Spec.Abstract != "during rotation" {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%v (abstract %q)", err, pb.Spec.Abstract))
						continue
					}
					ok.Add(1)
				}
			}()
		}
		DeferCleanup(func() { close(stop); wg.Wait() })

		requested := requestRotation(ctx)

		Eventually(func(g Gomega) {
			s := secret(g, ctx, certs.CASecretName)
			g.Expect(s.Annotations).To(HaveKeyWithValue("kubeharness.dev/rotated-for", requested), "rotation not finished")
			g.Expect(ok.Load()+failed.Load()).To(BeNumerically(">=", 500), "fewer than 500 admission requests so far")
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		close(stop)
		wg.Wait()
		stop = make(chan struct{})
		GinkgoWriter.Printf("admission requests during rotation: %d admitted, %d failed\n", ok.Load(), failed.Load())
		Expect(failed.Load()).To(BeZero(), "first failure: %v", firstErr.Load())

		By("leaving only the new CA published, and serving a certificate it signed")
		s := secret(Default, ctx, certs.CASecretName)
		newCA, err := certs.ParseCertificates(s.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		Expect(newCA[0].Equal(oldCA[0])).To(BeFalse(), "the CA did not change")
		publishedCerts, err := certs.ParseCertificates(s.Data["ca.crt"])
		Expect(err).NotTo(HaveOccurred())
		Expect(publishedCerts).To(HaveLen(1))
		Expect(publishedCerts[0].Equal(newCA[0])).To(BeTrue())
		Eventually(func(g Gomega) {
			for _, b := range injectedBundles(g, ctx) {
				g.Expect(b).To(Equal(s.Data["ca.crt"]))
			}
		}).Should(Succeed())
		served, err := handshake(s.Data["ca.crt"])
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Contains(oldServing, served.Raw)).To(BeFalse())
		Expect(served.CheckSignatureFrom(newCA[0])).To(Succeed())
	})

	It("runs under config/rbac, and says clearly what is missing when the approve rule is removed", labelSlow, Serial, labelRBAC, func(ctx SpecContext) {
		role := &rbacv1.ClusterRole{}
		Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: "kubeharness-manager-role"}, role)).To(Succeed())
		original := role.DeepCopy()
		DeferCleanup(func(ctx context.Context) {
			cur := &rbacv1.ClusterRole{}
			Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(original), cur)).To(Succeed())
			cur.Rules = original.Rules
			Expect(cluster.Client.Update(ctx, cur)).To(Succeed())
		})
		removed := false
		for i, r := range role.Rules {
			if len(r.Resources) == 1 && r.Resources[0] == "signers" {
				var verbs []string
				for _, v := range r.Verbs {
					if v != "approve" {
						verbs = append(verbs, v)
					}
				}
				role.Rules[i].Verbs, removed = verbs, true
			}
		}
		Expect(removed).To(BeTrue(), "config/rbac has no signers rule: %+v", role.Rules)
		Expect(cluster.Client.Update(ctx, role)).To(Succeed())

		By("forcing a new certificate request")
		oldCSR := &certificatesv1.CertificateSigningRequest{}
		Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: o.CSRName()}, oldCSR)).To(Succeed())
		Expect(cluster.Client.Delete(ctx, secret(Default, ctx, certs.ServingSecretName))).To(Succeed())

		var pending *certificatesv1.CertificateSigningRequest
		Eventually(func(g Gomega) {
			pending = &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: o.CSRName()}, pending)).To(Succeed())
			g.Expect(pending.UID).NotTo(Equal(oldCSR.UID))
			events := &corev1.EventList{}
			g.Expect(cluster.Client.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("InvolvedObject.Name", o.CSRName()),
				HaveField("InvolvedObject.UID", pending.UID),
				HaveField("Reason", certs.ReasonApprovalForbidden),
				HaveField("Message", SatisfyAll(ContainSubstring("verb approve"), ContainSubstring("signers"), ContainSubstring(certs.SignerName))),
			)))
		}).Should(Succeed())
		Expect(pending.Status.Conditions).NotTo(ContainElement(HaveField("Type", certificatesv1.CertificateApproved)))

		By("admissions still succeed on the certificate already in memory")
		Expect(cluster.Client.Create(ctx, MakePlaybook("still-served", *ns).Obj(), client.DryRunAll)).To(Succeed())

		By("denying the stuck request: the manager says so and asks again")
		denied := pending.DeepCopy()
		denied.Status.Conditions = append(denied.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "SpecDenied", Message: "denied by the rbac spec",
		})
		Expect(cluster.Client.SubResource("approval").Update(ctx, denied)).To(Succeed())
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(cluster.Client.List(ctx, events, client.InNamespace(o.Namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Reason", certs.ReasonCSRDenied), HaveField("Message", ContainSubstring("SpecDenied")))))
			again := &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: o.CSRName()}, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(pending.UID))
		}).Should(Succeed())

		By("restoring the rule: the request is approved and issued")
		cur := &rbacv1.ClusterRole{}
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(original), cur)).To(Succeed())
		cur.Rules = original.Rules
		Expect(cluster.Client.Update(ctx, cur)).To(Succeed())
		Eventually(func(g Gomega) {
			s := secret(g, ctx, certs.ServingSecretName)
			g.Expect(s.Data["tls.crt"]).NotTo(BeEmpty())
			issued := &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: o.CSRName()}, issued)).To(Succeed())
			g.Expect(issued.Status.Certificate).To(Equal(s.Data["tls.crt"]))
		}).Should(Succeed())
	})

	It("fails a tenant's self-approved request for kubernetes.default.svc as system:masters and issues no certificate", labelSlow, func(ctx SpecContext) {
		user := "tenant-" + *ns
		By("a tenant who may create requests and approve for every kubeharness.dev signer")
		tenantClient := tenant(ctx, user, []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"kubeharness.dev/*"}, Verbs: []string{"approve"}},
		})

		By("requesting a certificate for the API server's name in group system:masters, for a year")
		csr := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + *ns},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: newRequest(pkix.Name{CommonName: "kubernetes.default.svc", Organization: []string{"system:masters"}},
					[]string{"kubernetes.default.svc", "kubernetes.default", "kubernetes"}, nil),
				SignerName: certs.SignerName, Usages: certs.ServingUsages, ExpirationSeconds: ptr.To[int32](365 * 24 * 3600),
			},
		}
		// The RBAC authorizer sees the new binding through its informers.
		Eventually(func() error { return tenantClient.Create(ctx, csr) }).Should(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, csr))).To(Succeed())
		})
		Expect(csr.Spec.Username).To(Equal(user))

		By("approving it herself through the approval subresource")
		Eventually(func() error {
			cur := &certificatesv1.CertificateSigningRequest{}
			if err := tenantClient.Get(ctx, client.ObjectKeyFromObject(csr), cur); err != nil {
				return err
			}
			cur.Status.Conditions = append(cur.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TenantApproved", Message: "approved by the tenant",
			})
			return tenantClient.SubResource("approval").Update(ctx, cur)
		}).Should(Succeed())

		By("the signer failing it with the reason, whoever approved it")
		get := func(g Gomega) *certificatesv1.CertificateSigningRequest {
			cur := &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(csr), cur)).To(Succeed())
			return cur
		}
		Eventually(func(g Gomega) {
			cur := get(g)
			g.Expect(cur.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", certificatesv1.CertificateApproved), HaveField("Reason", "TenantApproved"))))
			g.Expect(cur.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", certificatesv1.CertificateFailed), HaveField("Status", corev1.ConditionTrue),
				HaveField("Reason", certs.ReasonPolicyViolation),
				HaveField("Message", SatisfyAll(
					ContainSubstring(fmt.Sprintf("requested by %q, not by the manager", user)),
					ContainSubstring("O=system:masters"),
					ContainSubstring("DNS name kubernetes.default.svc is not one of the webhook Service's names"),
				)),
			)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(get(g).Status.Certificate).To(BeEmpty())
		}).WithTimeout(operatortest.AfterDecision).Should(Succeed())
	})

	It("leaves a squatter's request under its name alone and gets its certificate under its fallback name", labelSlow, Serial, func(ctx SpecContext) {
		primary, fallback := o.CSRNames()[0], o.CSRNames()[1]
		squatter := "squatter-" + *ns
		squatterClient := tenant(ctx, squatter, []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
		})

		By("deleting the manager's issued request, which it does not need until it renews")
		mine := &certificatesv1.CertificateSigningRequest{}
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, mine)).To(Succeed())
			g.Expect(mine.Status.Certificate).NotTo(BeEmpty())
		}).Should(Succeed())
		Expect(cluster.Client.Delete(ctx, mine)).To(Succeed())
		Eventually(func() error {
			return cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, &certificatesv1.CertificateSigningRequest{})
		}).Should(Satisfy(apierrors.IsNotFound))

		By("a squatter creating a request of that name that looks like the manager's")
		squat := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: primary},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    newRequest(pkix.Name{CommonName: o.DNSNames()[0]}, o.DNSNames()[:2], nil),
				SignerName: certs.SignerName, Usages: certs.ServingUsages,
			},
		}
		Eventually(func() error { return squatterClient.Create(ctx, squat) }).Should(Succeed())
		DeferCleanup(func(ctx context.Context) {
			By("deleting the squatter's request: the manager goes back to its first name")
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, squat))).To(Succeed())
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: fallback}}))).To(Succeed())
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: certs.ServingSecretName}}))).To(Succeed())
			Eventually(func(g Gomega) {
				cur := &certificatesv1.CertificateSigningRequest{}
				if err := cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, cur); err != nil {
					// The manager asked under the fallback name again before its
					// cache saw the squatter's request go: once that is issued,
					// make it ask again.
					fb := &certificatesv1.CertificateSigningRequest{}
					if cluster.Client.Get(ctx, types.NamespacedName{Name: fallback}, fb) == nil && len(fb.Status.Certificate) > 0 &&
						bytes.Equal(secret(g, ctx, certs.ServingSecretName).Data["tls.crt"], fb.Status.Certificate) {
						g.Expect(cluster.Client.Delete(ctx, fb)).To(Succeed())
						g.Expect(cluster.Client.Delete(ctx, secret(g, ctx, certs.ServingSecretName))).To(Succeed())
					}
				}
				g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, cur)).To(Succeed())
				g.Expect(cur.Spec.Username).To(Equal(deploy.ManagerUser()))
				g.Expect(cur.Status.Certificate).NotTo(BeEmpty())
				g.Expect(secret(g, ctx, certs.ServingSecretName).Data["tls.crt"]).To(Equal(cur.Status.Certificate))
			}).Should(Succeed())
		})
		Expect(squat.Spec.Username).To(Equal(squatter))

		By("forcing a new serving certificate")
		Expect(cluster.Client.Delete(ctx, secret(Default, ctx, certs.ServingSecretName))).To(Succeed())

		By("the manager requesting under its fallback name, and serving what is issued")
		Eventually(func(g Gomega) {
			fb := &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: fallback}, fb)).To(Succeed())
			g.Expect(fb.Spec.Username).To(Equal(deploy.ManagerUser()))
			g.Expect(fb.Status.Certificate).NotTo(BeEmpty())
			stored := secret(g, ctx, certs.ServingSecretName).Data["tls.crt"]
			g.Expect(stored).To(Equal(fb.Status.Certificate))
			issued, err := certs.ParseCertificates(stored)
			g.Expect(err).NotTo(HaveOccurred())
			served, err := handshake(published(g, ctx))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(served.Equal(issued[0])).To(BeTrue(), "the certificate issued under the fallback name is not served yet")
		}).Should(Succeed())

		By("saying whose request holds the name and what to do")
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(cluster.Client.List(ctx, events, client.InNamespace(o.Namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", certs.ReasonCSRNameTaken),
				HaveField("Message", SatisfyAll(ContainSubstring(fmt.Sprintf("created by %q", squatter)),
					ContainSubstring("kubectl delete certificatesigningrequest "+primary), ContainSubstring("requesting under "+fallback))),
			)))
		}).Should(Succeed())

		By("neither deleting, approving nor signing the squatter's request")
		Consistently(func(g Gomega) {
			cur := &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, cur)).To(Succeed())
			g.Expect(cur.UID).To(Equal(squat.UID))
			g.Expect(cur.Status.Conditions).To(BeEmpty())
			g.Expect(cur.Status.Certificate).To(BeEmpty())
		}).WithTimeout(operatortest.AfterDecision).Should(Succeed())

		if cluster.ProbeAddr != "" {
			code, body, err := readyz()
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(http.StatusOK), "%s", body)
		}
	})

	It("reports a foreign annotated configuration it may not patch, while a CA rotation completes and /readyz stays OK", labelSlow, Serial, labelRotation, func(ctx SpecContext) {
		if cluster.ProbeAddr == "" {
			Skip("the manager's probe address is not reachable on " + cluster.Provider)
		}
		foreign := webhookFixture("kubeharness-fixture-foreign")
		Expect(cluster.Client.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, foreign))).To(Succeed())
		})

		By("a Warning Event on it saying why and what to do")
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(cluster.Client.List(ctx, events, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("InvolvedObject.Name", foreign.Name), HaveField("InvolvedObject.UID", foreign.UID),
				HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", certs.ReasonCAInjectionForbidden),
				HaveField("Message", SatisfyAll(ContainSubstring("may not patch"),
					ContainSubstring("validatingwebhookconfigurations with resourceNames ["+foreign.Name+"]"),
					ContainSubstring("remove the annotation"), ContainSubstring("do not wait for it"))),
			)))
		}).Should(Succeed())

		By("forcing a CA rotation, which completes while /readyz stays OK")
		requested := requestRotation(ctx)
		var unready []string
		// A rotation ends with the webhooks answering on the new CA.
		Eventually(func(g Gomega) {
			if code, body, err := readyz(); err != nil || code != http.StatusOK {
				unready = append(unready, fmt.Sprintf("%d %v: %s", code, err, body))
			}
			s := secret(g, ctx, certs.CASecretName)
			g.Expect(s.Annotations).To(HaveKeyWithValue("kubeharness.dev/rotated-for", requested), "rotation not finished; phase %q",
				s.Annotations["kubeharness.dev/rotation-phase"])
		}).WithTimeout(deploy.WebhookReadyTimeout).Should(Succeed())
		Expect(unready).To(BeEmpty(), "/readyz failed during the rotation")

		s := secret(Default, ctx, certs.CASecretName)
		Eventually(func(g Gomega) {
			for _, b := range injectedBundles(g, ctx) {
				g.Expect(b).To(Equal(s.Data["ca.crt"]))
			}
		}).Should(Succeed())
		_, err := handshake(s.Data["ca.crt"])
		Expect(err).NotTo(HaveOccurred())
		code, body, err := readyz()
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusOK), "%s", body)

		By("the foreign configuration still not patched by the manager")
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(foreign), got)).To(Succeed())
		Expect(got.Webhooks[0].ClientConfig.CABundle).To(BeEmpty())
		Expect(got.ManagedFields).NotTo(ContainElement(HaveField("Manager", certs.FieldManager)))
	})
})

// dialWebhook opens a TLS connection to the webhook server, offering HTTP/2,
// trusting only bundle.
func dialWebhook(bundle []byte) (tls.ConnectionState, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return tls.ConnectionState{}, fmt.Errorf("caBundle holds no certificate")
	}
	host, _, err := net.SplitHostPort(cluster.WebhookAddr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	if cluster.WebhookServerName != "" {
		host = cluster.WebhookServerName
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", cluster.WebhookAddr,
		&tls.Config{RootCAs: pool, ServerName: host, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}
