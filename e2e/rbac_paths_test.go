package e2e

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// The paths below are those config/rbac and config/vm/rbac grant a
// permission for that the suite's own environment never takes; `make
// rbac-audit` proves every permission used, so each has a spec here.

// A control plane of its own, with the manager and the VirtualMachine
// controller as processes: leader election (the suite's run without it),
// client-go's informers filled by plain lists (the suite's API server
// serves watch-list, which needs only watch; client-go lists where it is
// not served), and a CRD whose conversion webhook trusts kubeharness's CA
// (the Playbook CRD ships without one).
var _ = Describe("the manager and the VirtualMachine controller elected, listing", labelSlow, labelRBAC, labelEnvtestOnly, func() {
	It("take their Leases, fill their caches with lists, inject a conversion webhook's caBundle and reconcile", func(ctx SpecContext) {
		requires[operatortest.LocalControlPlanes]("control-plane binaries on this machine: the spec starts a control plane of its own")
		dir := GinkgoT().TempDir()
		binaries := map[string]string{}
		for _, name := range []string{"manager", "vm-controller"} {
			binaries[name] = filepath.Join(root, "bin", name)
			_, err := os.Stat(binaries[name])
			Expect(err).NotTo(HaveOccurred(), "%s is missing: `make e2e` builds it", binaries[name])
		}
		vmOpts, _, err := operatortest.VMControllerOptions()
		Expect(err).NotTo(HaveOccurred())
		vmOpts.Driver, vmOpts.NewDriver = driver.FakeDriverName, nil
		vmOpts.LeaderElection, vmOpts.LeaderElectionNS = true, vmcontroller.DefaultNamespace

		// client-go's WatchListClient off: the informers fill with lists,
		// as against an API server without watch-list.
		listing := []string{"KUBE_FEATURE_WatchListClient=false"}
		By("starting a control plane with both, each as its ServiceAccount, with leader election and client-go's watch-list off")
		env, err := operatortest.StartLocal(ctx, operatortest.LocalOptions{
			Root: root, Version: clusterVersion(), Out: GinkgoWriter,
			Manager: func(o *manager.Options) {
				o.LeaderElection, o.LeaderElectionNS = true, certs.DefaultNamespace
			},
			Runner: operatortest.ManagerProcess{
				Binary: binaries["manager"], Kubeconfig: filepath.Join(dir, "manager.kubeconfig"), Log: GinkgoWriter, Env: listing,
			},
			VMController: &vmOpts,
			VMRunner: operatortest.VMControllerProcess{
				Binary: binaries["vm-controller"], Kubeconfig: filepath.Join(dir, "vm-controller.kubeconfig"), Log: GinkgoWriter, Env: listing,
			},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		admin := env.Client

		By("each holding its Lease, the manager's takeover recorded in an Event")
		for _, key := range []types.NamespacedName{
			{Namespace: certs.DefaultNamespace, Name: manager.LeaderElectionID},
			{Namespace: vmcontroller.DefaultNamespace, Name: vmcontroller.LeaseName},
		} {
			Eventually(func(g Gomega) {
				lease := &coordinationv1.Lease{}
				g.Expect(admin.Get(ctx, key, lease)).To(Succeed())
				g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil(), "no holder of Lease %s", key)
			}).Should(Succeed())
		}
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(admin.List(ctx, events, client.InNamespace(certs.DefaultNamespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Reason", "LeaderElection"), HaveField("InvolvedObject.Name", manager.LeaderElectionID))))
		}).Should(Succeed())

		ns, err := operatortest.CreateNamespace(ctx, admin, "rbac-paths")
		Expect(err).NotTo(HaveOccurred())

		By("reconciling a Playbook into its notes")
		pb := MakePlaybook("listed", ns).Obj()
		Expect(admin.Create(ctx, pb)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &opsv1.Playbook{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(pb), cur)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, opsv1.ConditionReady)).To(BeTrue(), "Ready condition: %+v", cur.Status.Conditions)
			g.Expect(admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: cur.NotesConfigMapName()}, &corev1.ConfigMap{})).To(Succeed())
		}).Should(Succeed())

		By("running a VirtualMachine")
		vm := makeVM("listed", ns, "1", "32Mi")
		Expect(admin.Create(ctx, vm)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &cloudv1.VirtualMachine{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(vm), cur)).To(Succeed())
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
		}).Should(Succeed())

		By("injecting the CA into the Playbook CRD once it has a conversion webhook and asks for it")
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(admin.Get(ctx, types.NamespacedName{Name: certs.PlaybookCRDName}, crd)).To(Succeed())
		patch := client.MergeFrom(crd.DeepCopy())
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, certs.InjectCAAnnotation, "true")
		// One version is served, so the API server never calls it.
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d/convert", env.WebhookPort))},
			},
		}
		Expect(admin.Patch(ctx, crd, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			ca := &corev1.Secret{}
			g.Expect(admin.Get(ctx, types.NamespacedName{Namespace: certs.DefaultNamespace, Name: certs.CASecretName}, ca)).To(Succeed())
			cur := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(crd), cur)).To(Succeed())
			g.Expect(cur.Spec.Conversion.Webhook.ClientConfig.CABundle).To(Equal(ca.Data["ca.crt"]))
		}).Should(Succeed())
	})
})

var _ = Describe("the manager's certificate request under its fallback name", labelRBAC, labelCerts, func() {
	ns := specNamespace("rbac-paths")

	// The manager may delete its own requests by name: the first name's is
	// deleted in the certs specs; this one is the other's.
	It("is replaced when the certificate renews while another user's request holds the first name", Serial, func(ctx SpecContext) {
		o := cluster.CertOptions
		primary, fallback := o.CSRNames()[0], o.CSRNames()[1]
		// csr and serving take a context: the cleanup runs after the
		// spec's has ended.
		csr := func(ctx context.Context, g Gomega, name string) *certificatesv1.CertificateSigningRequest {
			cur := &certificatesv1.CertificateSigningRequest{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Name: name}, cur)).To(Succeed())
			return cur
		}
		serving := func(ctx context.Context, g Gomega) *corev1.Secret {
			s := &corev1.Secret{}
			g.Expect(cluster.Client.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: certs.ServingSecretName}, s)).To(Succeed())
			return s
		}
		// issuedUnder waits until the manager serves the certificate issued
		// for its request under name, and returns that request.
		issuedUnder := func(name string) *certificatesv1.CertificateSigningRequest {
			GinkgoHelper()
			var cur *certificatesv1.CertificateSigningRequest
			Eventually(func(g Gomega) {
				cur = csr(ctx, g, name)
				g.Expect(cur.Spec.Username).To(Equal(deploy.ManagerUser()))
				g.Expect(cur.Status.Certificate).NotTo(BeEmpty())
				g.Expect(serving(ctx, g).Data["tls.crt"]).To(Equal(cur.Status.Certificate))
			}).Should(Succeed())
			return cur
		}
		renew := func() {
			GinkgoHelper()
			Expect(cluster.Client.Delete(ctx, serving(ctx, Default))).To(Succeed())
		}

		By("another user's request taking the first name")
		mine := issuedUnder(primary)
		squatter := "squatter-" + *ns
		squatterClient := tenant(ctx, squatter, []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create"}},
		})
		Expect(cluster.Client.Delete(ctx, mine)).To(Succeed())
		Eventually(func() error {
			return cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, &certificatesv1.CertificateSigningRequest{})
		}).Should(Satisfy(apierrors.IsNotFound))
		squat := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: primary},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    newRequest(pkix.Name{CommonName: o.DNSNames()[0]}, o.DNSNames()[:2], nil),
				SignerName: certs.SignerName, Usages: certs.ServingUsages,
			},
		}
		// The RBAC authorizer sees the new binding through its informers.
		Eventually(func() error { return squatterClient.Create(ctx, squat) }).Should(Succeed())
		DeferCleanup(func(ctx context.Context) {
			By("deleting the other user's request: the manager goes back to its first name")
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, squat))).To(Succeed())
			Eventually(func() error {
				return cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, &certificatesv1.CertificateSigningRequest{})
			}).Should(Satisfy(apierrors.IsNotFound))
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: fallback}}))).To(Succeed())
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: certs.ServingSecretName}}))).To(Succeed())
			Eventually(func(g Gomega) {
				// The manager may have asked under the fallback name again
				// before its cache saw the other request go: once that is
				// issued, make it ask again.
				if err := cluster.Client.Get(ctx, types.NamespacedName{Name: primary}, &certificatesv1.CertificateSigningRequest{}); apierrors.IsNotFound(err) {
					fb := &certificatesv1.CertificateSigningRequest{}
					if cluster.Client.Get(ctx, types.NamespacedName{Name: fallback}, fb) == nil && len(fb.Status.Certificate) > 0 &&
						bytes.Equal(serving(ctx, g).Data["tls.crt"], fb.Status.Certificate) {
						g.Expect(cluster.Client.Delete(ctx, fb)).To(Succeed())
						g.Expect(cluster.Client.Delete(ctx, serving(ctx, g))).To(Succeed())
					}
				}
				cur := csr(ctx, g, primary)
				g.Expect(cur.Spec.Username).To(Equal(deploy.ManagerUser()))
				g.Expect(cur.Status.Certificate).NotTo(BeEmpty())
				g.Expect(serving(ctx, g).Data["tls.crt"]).To(Equal(cur.Status.Certificate))
			}).Should(Succeed())
		})

		By("the manager's certificate issued under its fallback name")
		renew()
		first := issuedUnder(fallback)

		By("renewing: the manager deletes its own request under the fallback name and asks again under it")
		renew()
		Eventually(func(g Gomega) {
			g.Expect(csr(ctx, g, fallback).UID).NotTo(Equal(first.UID))
		}).Should(Succeed())
		issuedUnder(fallback)
		Expect(csr(ctx, Default, primary).UID).To(Equal(squat.UID), "the other user's request was touched")
	})
})
