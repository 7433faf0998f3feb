package smoke

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/suite"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/operatortest"
)

const (
	// nodesReady bounds how long every node of a new cluster may take to
	// turn Ready (kind waits for the control plane only).
	nodesReady = 3 * time.Minute
	// podDone bounds how long a smoke Pod may take to run to completion,
	// image unpacking included.
	podDone = 2 * time.Minute
)

var _ = Describe("kind cluster", Label("kind-smoke"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) {
		c, err := client.New(config, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		ns = suite.Namespace(ctx, c, "smoke", suite.WithLabels(map[string]string{operatortest.SpecLabel: "true"}))
	})

	It("has every node of kind-config.yaml Ready at the expected version", func(ctx SpecContext) {
		want := expectedVersion()
		Eventually(func(g Gomega) {
			nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nodes.Items).To(HaveLen(3), "kind-config.yaml has one control-plane node and two workers")
			for _, n := range nodes.Items {
				g.Expect(operatortest.NodeReady(&n)).To(BeTrue(), "node %s is not Ready: %v", n.Name, n.Status.Conditions)
				g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(want), "node %s", n.Name)
			}
		}).WithTimeout(nodesReady).WithPolling(time.Second).Should(Succeed())
	})

	It("runs a Pod from an image built in this run to completion and reads its log back", func(ctx SpecContext) {
		pod := runToCompletion(ctx, ns, "hello", "", "hello")
		Expect(logs(ctx, pod)).To(ContainSubstring("kubeharness smoke: hello from " + pod.Name))
	})

	It("resolves Service names through CoreDNS", func(ctx SpecContext) {
		pod := runToCompletion(ctx, ns, "dns", "", "lookup", "kubernetes.default.svc.cluster.local")
		svc, err := clientset.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(logs(ctx, pod)).To(ContainSubstring("has addresses " + svc.Spec.ClusterIP))
	})

	It("routes a Service to a Pod on another node", func(ctx SpecContext) {
		workers := workerNodes(ctx)
		Expect(workers).To(HaveLen(2))
		server := smokePod(ns, "server", workers[0], "serve")
		server.Labels = map[string]string{"app": "smoke-server"}
		server.Spec.RestartPolicy = corev1.RestartPolicyAlways
		server.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
		_, err := clientset.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = clientset.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "smoke-server"},
				Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := clientset.CoreV1().Pods(ns).Get(ctx, "server", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(operatortest.PodReady(p)).To(BeTrue(), "server Pod: %s", p.Status.Phase)
		}).WithTimeout(podDone).WithPolling(time.Second).Should(Succeed())

		client := runToCompletion(ctx, ns, "client", workers[1], "get", fmt.Sprintf("http://smoke.%s.svc.cluster.local/", ns))
		Expect(logs(ctx, client)).To(ContainSubstring("kubeharness smoke from server"),
			"the client on %s should reach the server on %s through the Service", workers[1], workers[0])
	})
})

// expectedVersion is the kubelet version the cluster should run: the one
// the lockfile resolves $K8S_VERSION to.
func expectedVersion() string {
	GinkgoHelper()
	lock, err := versions.LoadLockfile(root)
	Expect(err).NotTo(HaveOccurred())
	sel, err := versions.FromEnv()
	Expect(err).NotTo(HaveOccurred())
	v, exact := sel.Exact()
	if !sel.Explicit() {
		v, exact = lock.Default, true
	}
	if !exact {
		Skip("K8S_VERSION names a minor only; the kubelet version cannot be predicted offline")
	}
	return "v" + v.String()
}

func smokePod(ns, name, node string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "smoke", Image: smokeImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
}

// runToCompletion runs the smoke image with args (on node, when named) and
// waits for the Pod to succeed.
func runToCompletion(ctx context.Context, ns, name, node string, args ...string) *corev1.Pod {
	GinkgoHelper()
	_, err := clientset.CoreV1().Pods(ns).Create(ctx, smokePod(ns, name, node, args...), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	var pod *corev1.Pod
	Eventually(func(g Gomega) {
		pod, err = clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Status.Phase).NotTo(Equal(corev1.PodFailed), "Pod %s failed; its log:\n%s", name, logsOrError(ctx, pod))
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
	}).WithTimeout(podDone).WithPolling(time.Second).Should(Succeed())
	return pod
}

func logs(ctx context.Context, pod *corev1.Pod) string {
	GinkgoHelper()
	b, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

func logsOrError(ctx context.Context, pod *corev1.Pod) string {
	b, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func workerNodes(ctx context.Context) []string {
	GinkgoHelper()
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, n := range nodes.Items {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
			names = append(names, n.Name)
		}
	}
	return names
}
