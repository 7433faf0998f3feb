package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/e2e/framework"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	"github.com/kubeharness/kubeharness/webhook/certs"
)

// The VirtualMachine controller deployed from config/vm (kind, existing
// clusters), driving the host's Docker daemon over mutual TLS.
var _ = Describe("The deployed VirtualMachine controller", Label("vm", "docker", "cluster"), Serial, func() {
	ns := specNamespace("vm-deployed")
	secretKey := types.NamespacedName{Namespace: certs.DefaultNamespace, Name: framework.VMDockerCertsSecret}
	deployKey := types.NamespacedName{Namespace: certs.DefaultNamespace, Name: framework.VMControllerDeployment}

	BeforeEach(func(ctx SpecContext) {
		if !cluster.RealNodes || cluster.VMDriver != "docker" {
			Skip("needs the VirtualMachine controller deployed from config/vm (kind with make docker-up's TLS material)")
		}
	})

	restart := func(ctx context.Context) {
		GinkgoHelper()
		d := &appsv1.Deployment{}
		Expect(cluster.Client.Get(ctx, deployKey, d)).To(Succeed())
		patch := client.MergeFrom(d.DeepCopy())
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations["kubeharness.dev/restarted-at"] = time.Now().UTC().Format(time.RFC3339Nano)
		Expect(cluster.Client.Patch(ctx, d, patch)).To(Succeed())
		Expect(framework.WaitForDeployment(ctx, cluster.Client, deployKey)).To(Succeed())
	}

	It("reports a client certificate the daemon does not trust in the status and the log, and recovers with the right one", func(ctx SpecContext) {
		secret := &corev1.Secret{}
		Expect(cluster.Client.Get(ctx, secretKey, secret)).To(Succeed())
		good := secret.DeepCopy()
		DeferCleanup(func(ctx context.Context) {
			cur := &corev1.Secret{}
			Expect(cluster.Client.Get(ctx, secretKey, cur)).To(Succeed())
			cur.Data = good.Data
			Expect(cluster.Client.Update(ctx, cur)).To(Succeed())
			restart(ctx)
		})

		By("giving the controller a client certificate of another CA")
		certPEM, keyPEM := selfSignedClient()
		secret.Data["cert.pem"], secret.Data["key.pem"] = certPEM, keyPEM
		Expect(cluster.Client.Update(ctx, secret)).To(Succeed())
		restart(ctx)

		vm := makeVM("untrusted", *ns, "500m", "32Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		var reason string
		Eventually(func(g Gomega) {
			cur := getVM(g, ctx, vm)
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineFailed))
			reason = cur.Status.Reason
			g.Expect(strings.ToLower(reason)).To(ContainSubstring("tls"))
			g.Expect(reason).To(ContainSubstring(framework.DockerHostName))
		}).WithTimeout(framework.Reconcile).Should(Succeed())
		GinkgoWriter.Printf("status.reason: %s\n", reason)

		By("saying so in the leader's log")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(cluster.Client.List(ctx, pods, client.InNamespace(certs.DefaultNamespace), client.MatchingLabels{"control-plane": "vm-controller"})).To(Succeed())
			var logs strings.Builder
			for _, p := range pods.Items {
				raw, err := cluster.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				logs.Write(raw)
			}
			g.Expect(logs.String()).To(ContainSubstring(framework.DockerHostName))
			g.Expect(strings.ToLower(logs.String())).To(ContainSubstring("tls"))
		}).WithTimeout(framework.Reconcile).Should(Succeed())

		By("recovering once the right certificate is back")
		cur := &corev1.Secret{}
		Expect(cluster.Client.Get(ctx, secretKey, cur)).To(Succeed())
		cur.Data = good.Data
		Expect(cluster.Client.Update(ctx, cur)).To(Succeed())
		restart(ctx)
		Eventually(func(g Gomega) {
			g.Expect(getVM(g, ctx, vm).Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
		}).WithTimeout(framework.HarnessVMOptions().FailedRetry + framework.Reconcile).Should(Succeed())
	})
})

// selfSignedClient is a client certificate and key no one trusts.
func selfSignedClient() (certPEM, keyPEM []byte) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "untrusted"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
