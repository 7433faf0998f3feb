package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os/exec"
	"path"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hcluster "github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
)

// The VirtualMachine controller deployed from config/vm (kind, existing
// clusters), driving the host's Docker daemon over mutual TLS.
var _ = Describe("The deployed VirtualMachine controller", labelVM, labelDocker, labelCluster, Serial, func() {
	ns := specNamespace("vm-deployed")
	secretKey := types.NamespacedName{Namespace: deploy.VMNamespace, Name: deploy.VMDockerCertsSecret}
	deployKey := types.NamespacedName{Namespace: deploy.VMNamespace, Name: deploy.VMControllerDeployment}

	BeforeEach(func(ctx SpecContext) {
		if _, onNodes := hcluster.Ability[operatortest.RealNodes](cluster.Cluster); !onNodes || cluster.VMDriver != "docker" {
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
		Expect(deploy.WaitForDeployment(ctx, cluster.Client, deployKey)).To(Succeed())
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
			// The daemon's address is the operator's business: the log
			// has it, the tenant's status does not.
			g.Expect(reason).NotTo(ContainSubstring(deploy.DockerHostName))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		GinkgoWriter.Printf("status.reason: %s\n", reason)

		By("saying so in the leader's log")
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(cluster.Client.List(ctx, pods, client.InNamespace(deploy.VMNamespace), client.MatchingLabels{"control-plane": "vm-controller"})).To(Succeed())
			var logs strings.Builder
			for _, p := range pods.Items {
				raw, err := cluster.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				logs.Write(raw)
			}
			g.Expect(logs.String()).To(ContainSubstring(deploy.DockerHostName))
			g.Expect(strings.ToLower(logs.String())).To(ContainSubstring("tls"))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())

		By("recovering once the right certificate is back")
		cur := &corev1.Secret{}
		Expect(cluster.Client.Get(ctx, secretKey, cur)).To(Succeed())
		cur.Data = good.Data
		Expect(cluster.Client.Update(ctx, cur)).To(Succeed())
		restart(ctx)
		Eventually(func(g Gomega) {
			g.Expect(getVM(g, ctx, vm).Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
		}).WithTimeout(deploy.HarnessVMOptions().FailedRetry + operatortest.Reconcile).Should(Succeed())
	})
})

// The key is mounted root-owned with mode 0440: the controller runs as uid
// 65532, not root, so it reads the key only through the group the Pod's
// fsGroup gives the files. The Pods that read it here run in the
// controller's namespace (a Pod mounts Secrets of its own namespace only)
// and are deleted after the spec.
var _ = Describe("The deployed VirtualMachine controller's Docker key", labelVM, labelDocker, labelCluster, labelSecrets, Serial, func() {
	secretKey := types.NamespacedName{Namespace: deploy.VMNamespace, Name: deploy.VMDockerCertsSecret}
	deployKey := types.NamespacedName{Namespace: deploy.VMNamespace, Name: deploy.VMControllerDeployment}

	BeforeEach(func(ctx SpecContext) {
		if _, onNodes := hcluster.Ability[operatortest.RealNodes](cluster.Cluster); !onNodes || cluster.VMDriver != "docker" {
			Skip("needs the VirtualMachine controller deployed from config/vm (kind with make docker-up's TLS material)")
		}
	})

	It("is mounted with mode 0440, group 65532, and read by the controller's user", func(ctx SpecContext) {
		d := &appsv1.Deployment{}
		Expect(cluster.Client.Get(ctx, deployKey, d)).To(Succeed())
		secret := &corev1.Secret{}
		Expect(cluster.Client.Get(ctx, secretKey, secret)).To(Succeed())
		Expect(secret.Data).To(HaveKey("key.pem"))
		spec := d.Spec.Template.Spec

		By("the Deployment mounting the Secret with mode 0440 into a container that runs as 65532 in group 65532")
		var volume *corev1.Volume
		for i, v := range spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == deploy.VMDockerCertsSecret {
				volume = &spec.Volumes[i]
			}
		}
		Expect(volume).NotTo(BeNil(), "Deployment %s mounts no Secret %s", deployKey, deploy.VMDockerCertsSecret)
		Expect(volume.Secret.DefaultMode).To(HaveValue(Equal(int32(0o440))))
		Expect(spec.SecurityContext).NotTo(BeNil())
		Expect(spec.SecurityContext.RunAsUser).To(HaveValue(Equal(int64(65532))))
		Expect(spec.SecurityContext.FSGroup).To(HaveValue(Equal(int64(65532))))
		var ctr *corev1.Container
		for i := range spec.Containers {
			if spec.Containers[i].Name == deploy.VMControllerContainer {
				ctr = &spec.Containers[i]
			}
		}
		Expect(ctr).NotTo(BeNil())
		mountPath := ""
		for _, m := range ctr.VolumeMounts {
			if m.Name == volume.Name {
				mountPath = m.MountPath
			}
		}
		Expect(mountPath).To(Equal(deploy.VMDockerCertsPath))

		if _, onKind := hcluster.Ability[operatortest.KindNodes](cluster.Cluster); onKind {
			By("the key file of a running controller Pod being root's, group 65532, mode 0440, on its node")
			pods := &corev1.PodList{}
			Expect(cluster.Client.List(ctx, pods, client.InNamespace(deploy.VMNamespace), client.MatchingLabels{"control-plane": "vm-controller"})).To(Succeed())
			var pod *corev1.Pod
			for i := range pods.Items {
				if pods.Items[i].DeletionTimestamp == nil && operatortest.PodReady(&pods.Items[i]) {
					pod = &pods.Items[i]
				}
			}
			Expect(pod).NotTo(BeNil(), "no Ready controller Pod in %s", deploy.VMNamespace)
			file := fmt.Sprintf("/var/lib/kubelet/pods/%s/volumes/kubernetes.io~secret/%s/key.pem", pod.UID, volume.Name)
			out, err := exec.CommandContext(ctx, "docker", "exec", pod.Spec.NodeName, "stat", "-L", "-c", "%a %u %g", file).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "stat %s on node %s: %s", file, pod.Spec.NodeName, out)
			Expect(strings.TrimSpace(string(out))).To(Equal("440 0 65532"), "mode, owner and group of %s", file)
		}

		By("a Pod of the controller's spec, running as its user, reading the key")
		reader := spec.DeepCopy()
		c := ctr.DeepCopy()
		c.Name, c.Image, c.ImagePullPolicy = "key-reader", deploy.SmokeImage, corev1.PullIfNotPresent
		c.Command, c.Args = nil, []string{"cat", path.Join(mountPath, "key.pem")}
		c.Env, c.Ports, c.LivenessProbe, c.ReadinessProbe = nil, nil, nil, nil
		reader.Containers = []corev1.Container{*c}
		reader.RestartPolicy = corev1.RestartPolicyNever
		reader.AutomountServiceAccountToken = ptr.To(false)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "docker-key-reader-", Namespace: deploy.VMNamespace},
			Spec:       *reader,
		}
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, pod))).To(Succeed())
		})
		Eventually(func(g Gomega) corev1.PodPhase {
			cur := &corev1.Pod{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur)).To(Succeed())
			if cur.Status.Phase == corev1.PodFailed {
				StopTrying("the reader could not read the key: " + podLog(ctx, cur)).Now()
			}
			return cur.Status.Phase
		}).WithTimeout(operatortest.Reconcile).Should(Equal(corev1.PodSucceeded))
		Expect(podLog(ctx, pod)).To(Equal(string(secret.Data["key.pem"])))
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
