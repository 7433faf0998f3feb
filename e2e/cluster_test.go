package e2e

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hcluster "github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/webhook/overcommit"
	"github.com/kubeharness/kubeharness/webhook/sidecar"

	. "github.com/kubeharness/kubeharness/internal/testutil"
)

const (
	// podRunning bounds how long a Pod on a kind node may take to run.
	podRunning = 2 * time.Minute
	// leaderHandover bounds how long the manager may go without a leader
	// after the leader's Pod is killed.
	leaderHandover = 15 * time.Second
	// heartbeatWindow is how long overcommit is watched under the kubelet's
	// own status reports.
	heartbeatWindow = time.Minute
)

// Specs only a cluster with kubelets and the manager deployed from
// config/default can run (PROVIDER=kind, or existing).
var _ = Describe("on a real cluster", labelCluster, func() {
	BeforeEach(func() {
		requires[operatortest.RealNodes]("kubelets that run Pods and the manager deployed from config/default (PROVIDER=kind)")
	})
	ns := specNamespace("cluster")

	It("runs both the injected init container and the sidecar of a Pod", labelSidecar, func(ctx SpecContext) {
		labelled := enterNamespace(ctx, "cluster-sidecar", map[string]string{"kubeharness.dev/sidecar-injection": "enabled"})
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: labelled},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: deploy.SmokeImage, ImagePullPolicy: corev1.PullNever, Args: []string{"sleep"},
			}}},
		}
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.InitContainerStatuses).To(ContainElement(SatisfyAll(
				HaveField("Name", sidecar.InitContainerName),
				HaveField("State.Terminated", Not(BeNil())),
				HaveField("State.Terminated.ExitCode", BeZero()),
			)), "the injected init container ran to completion")
			g.Expect(pod.Status.ContainerStatuses).To(ConsistOf(
				SatisfyAll(HaveField("Name", "app"), HaveField("State.Running", Not(BeNil())), HaveField("Ready", BeTrue())),
				SatisfyAll(HaveField("Name", sidecar.SidecarContainerName), HaveField("State.Running", Not(BeNil())), HaveField("Ready", BeTrue())),
			), "both the Pod's own container and the sidecar run")
		}).WithTimeout(podRunning).WithPolling(time.Second).Should(Succeed())
	})

	It("keeps a node overcommitted under the kubelet's own status reports for a minute", labelOvercommit, labelSlow, func(ctx SpecContext) {
		nodes := &corev1.NodeList{}
		Expect(cluster.Client.List(ctx, nodes, client.MatchingLabels{overcommitLabel: "true"})).To(Succeed())
		var node *corev1.Node
		for i := range nodes.Items {
			if strings.HasPrefix(nodes.Items[i].Spec.ProviderID, "kind://") || nodes.Items[i].Status.NodeInfo.KubeletVersion != "" {
				node = &nodes.Items[i]
				break
			}
		}
		Expect(node).NotTo(BeNil(), "kind-config.yaml labels one worker %s=true", overcommitLabel)
		cpuRatio, memRatio := ratios(node)

		overcommitted := func(g Gomega, n *corev1.Node) {
			rawCPU, err := resource.ParseQuantity(n.Annotations[overcommitRawCPU])
			g.Expect(err).NotTo(HaveOccurred(), "raw CPU annotation of %s", n.Name)
			rawMem, err := resource.ParseQuantity(n.Annotations[overcommitRawMemory])
			g.Expect(err).NotTo(HaveOccurred(), "raw memory annotation of %s", n.Name)
			g.Expect(float64(n.Status.Allocatable.Cpu().MilliValue())).To(BeNumerically("~", float64(rawCPU.MilliValue())*cpuRatio, 1),
				"allocatable CPU of %s is the kubelet's %s times %v", n.Name, rawCPU.String(), cpuRatio)
			g.Expect(float64(n.Status.Allocatable.Memory().Value())).To(BeNumerically("~", float64(rawMem.Value())*memRatio, math.Max(1, float64(rawMem.Value())*memRatio/1e6)),
				"allocatable memory of %s is the kubelet's %s times %v", n.Name, rawMem.String(), memRatio)
			g.Expect(operatortest.NodeReady(n)).To(BeTrue(), "node %s stays Ready", n.Name)
		}
		By("waiting for a kubelet status report to be overcommitted")
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
			overcommitted(g, node)
		}).WithTimeout(operatortest.Reconcile * 3).WithPolling(time.Second).Should(Succeed())

		By(fmt.Sprintf("watching every write to node %s for %s", node.Name, heartbeatWindow))
		w, err := cluster.Clientset.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", node.Name).String(), ResourceVersion: node.ResourceVersion,
		})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		deadline := time.After(heartbeatWindow)
		writes, heartbeats := 0, 0
		lastHeartbeat := readyHeartbeat(node)
	watching:
		for {
			select {
			case <-deadline:
				break watching
			case ev, ok := <-w.ResultChan():
				Expect(ok).To(BeTrue(), "the node watch closed early")
				Expect(ev.Type).To(Equal(watch.Modified), "node %s: %v", node.Name, ev.Object)
				n := ev.Object.(*corev1.Node)
				writes++
				if hb := readyHeartbeat(n); hb.After(lastHeartbeat) {
					heartbeats++
					lastHeartbeat = hb
				}
				overcommitted(Default, n)
			}
		}
		GinkgoWriter.Printf("node %s: %d writes, %d kubelet status reports in %s, every one overcommitted\n", node.Name, writes, heartbeats, heartbeatWindow)
		Expect(heartbeats).To(BeNumerically(">=", 3), "the kubelet reports status every 10 s (kind-config.yaml); fewer reports mean the window proved nothing")
	})

	It("makes an AppService's Deployment Ready and garbage-collects its children after delete", labelAppService, func(ctx SpecContext) {
		as := MakeAppService("web", *ns, deploy.SmokeServerImage).Size(2).
			Ports(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}).Obj()
		Expect(cluster.Client.Create(ctx, as)).To(Succeed())
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: as.Name, Namespace: *ns}}
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
			g.Expect(dep.Status.ReadyReplicas).To(Equal(int32(2)), "ready replicas of %s", dep.Name)
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), as)).To(Succeed())
			g.Expect(as.Status.ReadyReplicas).To(Equal(int32(2)), "the AppService mirrors its Deployment: %+v", as.Status)
		}).WithTimeout(podRunning).WithPolling(time.Second).Should(Succeed())
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: as.Name, Namespace: *ns}}
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))

		By("deleting the AppService: the garbage collector removes the Deployment, its Pods and the Service")
		Expect(cluster.Client.Delete(ctx, as)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{}))).To(BeTrue(), "Deployment still there")
			g.Expect(apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}))).To(BeTrue(), "Service still there")
			pods := &corev1.PodList{}
			g.Expect(cluster.Client.List(ctx, pods, client.InNamespace(*ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "Pods still there")
		}).WithTimeout(operatortest.GarbageCollection).WithPolling(time.Second).Should(Succeed())
	})

	// Serial: the killed replica serves webhooks too, and other specs'
	// admissions routed to it would fail until its endpoint goes.
	It("hands leadership over within 15 s when the leader's manager is killed, and reconciles a Playbook created meanwhile", labelLeaderElection, labelSlow, Serial, func(ctx SpecContext) {
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: certs.DefaultNamespace, Name: manager.LeaderElectionID}
		Expect(cluster.Client.Get(ctx, key, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil(), "no leader holds %s", key)
		oldHolder := *lease.Spec.HolderIdentity
		leaderPod, _, _ := strings.Cut(oldHolder, "_")
		DeferCleanup(func(ctx context.Context) {
			Expect(deploy.WaitForRollout(ctx, cluster.Client)).To(Succeed(), "the Deployment replaces the killed Pod")
		})

		killed := killManager(ctx, leaderPod)
		pb := MakePlaybook("during-handover", *ns).Abstract("written while the leader was gone").Obj()
		Eventually(func() error { return cluster.Client.Create(ctx, pb) }).WithTimeout(deploy.WebhookReadyTimeout).
			Should(Succeed(), "the webhooks keep admitting through the surviving replica")

		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, key, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty(), "the Lease is released, not yet taken over")
			// Every manager process campaigns under a fresh identity, so a
			// new holder is a new election, won by the other replica or by
			// the killed container once restarted, whichever is first.
			g.Expect(*lease.Spec.HolderIdentity).NotTo(Equal(oldHolder))
		}).WithTimeout(leaderHandover).Should(Succeed(), "no new leader within %s of the kill", leaderHandover)
		GinkgoWriter.Printf("leadership moved from %s to %s %s after the kill\n", oldHolder, *lease.Spec.HolderIdentity, time.Since(killed).Round(100*time.Millisecond))

		By("reconciling the Playbook under the new leader")
		Eventually(func(g Gomega) {
			got := &opsv1.Playbook{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pb), got)).To(Succeed())
			g.Expect(got.Finalizers).To(ContainElement(opsv1.CleanupFinalizer))
			cm := &corev1.ConfigMap{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: *ns, Name: got.NotesConfigMapName()}, cm)).To(Succeed())
		}).Should(Succeed())
	})

	It("serves, inside the cluster, a certificate issued through the CSR API that verifies against the injected caBundle", labelCerts, func(ctx SpecContext) {
		o := cluster.CertOptions
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: "kubeharness-validating-webhook-configuration"}, vwc)).To(Succeed())
		bundle := vwc.Webhooks[0].ClientConfig.CABundle
		Expect(bundle).NotTo(BeEmpty(), "the manager injected no caBundle")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cabundle", Namespace: *ns}, Data: map[string]string{"ca.crt": string(bundle)}}
		Expect(cluster.Client.Create(ctx, cm)).To(Succeed())

		url := fmt.Sprintf("https://%s.%s.svc:443/readyz", o.ServiceName, o.Namespace)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "tls-client", Namespace: *ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "client", Image: deploy.SmokeImage, ImagePullPolicy: corev1.PullNever,
					Args:         []string{"tlsget", url, "/ca/ca.crt"},
					VolumeMounts: []corev1.VolumeMount{{Name: "ca", MountPath: "/ca"}},
				}},
				Volumes: []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}},
			},
		}
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).NotTo(Equal(corev1.PodFailed), "the TLS client failed; its log:\n%s", podLog(ctx, pod))
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
		}).WithTimeout(podRunning).WithPolling(time.Second).Should(Succeed())
		log := podLog(ctx, pod)
		Expect(log).To(ContainSubstring("verified "+o.ServiceName), "a client in the cluster trusting only caBundle accepted the webhook Service")

		By("serving the certificate the CSR API issued")
		csr := &certificatesv1.CertificateSigningRequest{}
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: o.CSRName()}, csr)).To(Succeed())
		Expect(csr.Spec.SignerName).To(Equal(certs.SignerName))
		Expect(csr.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", certificatesv1.CertificateApproved), HaveField("Status", corev1.ConditionTrue))))
		issued, err := certs.ParseCertificates(csr.Status.Certificate)
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(ContainSubstring("serial "+issued[0].SerialNumber.Text(16)), "the served certificate is the one in the CSR's status")
	})
})

// ratios are the overcommit ratios the webhook applies to node: its
// annotations, else the manager's defaults (config/default sets none).
func ratios(node *corev1.Node) (cpu, mem float64) {
	d := overcommit.DefaultConfig()
	cpu, mem = d.CPURatio, d.MemoryRatio
	if v, err := strconv.ParseFloat(node.Annotations[overcommitCPURatio], 64); err == nil {
		cpu = v
	}
	if v, err := strconv.ParseFloat(node.Annotations[overcommitMemoryRatio], 64); err == nil {
		mem = v
	}
	return cpu, mem
}

// readyHeartbeat is when the kubelet last reported the node's Ready
// condition, which it refreshes on every status report.
func readyHeartbeat(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

// killManager kills the manager in pod the way a crash would, so it cannot
// release the Lease: on kind, SIGKILL to its container through the node's
// containerd; elsewhere, deleting the Pod without a grace period. It returns
// when the kill was sent.
func killManager(ctx context.Context, name string) time.Time {
	GinkgoHelper()
	pod, err := cluster.Clientset.CoreV1().Pods(certs.DefaultNamespace).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	if _, onKind := hcluster.Ability[operatortest.KindNodes](cluster.Cluster); !onKind {
		By("deleting leader Pod " + name + " without a grace period")
		killed := time.Now()
		Expect(cluster.Clientset.CoreV1().Pods(certs.DefaultNamespace).Delete(ctx, name,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
		return killed
	}
	Expect(pod.Status.ContainerStatuses).NotTo(BeEmpty())
	id := pod.Status.ContainerStatuses[0].ContainerID
	Expect(id).To(HavePrefix("containerd://"))
	By("sending SIGKILL to the manager container of leader Pod " + name + " on node " + pod.Spec.NodeName)
	killed := time.Now()
	out, err := exec.CommandContext(ctx, "docker", "exec", pod.Spec.NodeName,
		"ctr", "--namespace=k8s.io", "task", "kill", "--signal", "SIGKILL", strings.TrimPrefix(id, "containerd://")).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	return killed
}

func podLog(ctx context.Context, pod *corev1.Pod) string {
	b, err := cluster.Clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}
