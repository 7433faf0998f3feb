package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/scheme"
)

const (
	overcommitLabel       = "overcommit.kubeharness.dev/enabled"
	overcommitCPURatio    = "overcommit.kubeharness.dev/cpu-ratio"
	overcommitMemoryRatio = "overcommit.kubeharness.dev/memory-ratio"
	overcommitRawCPU      = "overcommit.kubeharness.dev/raw-cpu"
	overcommitRawMemory   = "overcommit.kubeharness.dev/raw-memory"
)

// warningCollector keeps the admission warnings a client receives.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningCollector) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

var _ = Describe("node overcommit", labelOvercommit, func() {
	// Nodes are cluster-scoped; each spec's nodes carry its namespace name.
	ns := specNamespace("overcommit")

	// createNode creates a node as an admin would register it. No kubelet
	// runs it, so it is tainted NoSchedule from its first moment: on a real
	// cluster the scheduler would otherwise place other specs' Pods on it
	// before the node lifecycle controller taints it not-ready (a volume
	// claim bound for such a node stays stuck after it is deleted).
	createNode := func(ctx context.Context, name string, labels, annotations map[string]string) *corev1.Node {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + *ns, Labels: labels, Annotations: annotations},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kubeharness.dev/no-kubelet", Effect: corev1.TaintEffectNoSchedule}}}}
		Expect(cluster.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, node))).To(Succeed())
		})
		return node
	}
	// asNode returns a client acting as the node's own kubelet identity.
	asNode := func(node *corev1.Node) (client.Client, *warningCollector) {
		cfg := rest.CopyConfig(cluster.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + node.Name, Groups: []string{"system:nodes", "system:authenticated"}}
		w := &warningCollector{}
		cfg.WarningHandler = w
		c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		return c, w
	}
	// heartbeat sends a status update with the allocatable a kubelet reports.
	heartbeat := func(ctx context.Context, c client.Client, name, cpu, memory string) *corev1.Node {
		node := &corev1.Node{}
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		// A patch of the status alone, as kubelets send: on a real cluster
		// the node lifecycle controller taints these kubelet-less nodes
		// meanwhile, and a full update would carry stale taints, which
		// NodeRestriction refuses from a node.
		patch := client.MergeFrom(node.DeepCopy())
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourcePods: resource.MustParse("110")}
		Expect(c.Status().Patch(ctx, node, patch)).To(Succeed())
		return node
	}
	allocatable := func(node *corev1.Node) (string, string) {
		return node.Status.Allocatable.Cpu().String(), node.Status.Allocatable.Memory().String()
	}
	// conditionsOnly sends a strategic merge patch of the node's
	// KernelDeadlock condition alone, heartbeat at, as node-problem-detector
	// does with the kubelet's credentials: allocatable is not in it.
	conditionsOnly := func(ctx context.Context, c client.Client, name string, at time.Time) *corev1.Node {
		GinkgoHelper()
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
			Type: "KernelDeadlock", Status: corev1.ConditionFalse, Reason: "KernelHasNoDeadlock", Message: "kernel has no deadlock",
			LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at),
		}}}})
		Expect(err).NotTo(HaveOccurred())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		Expect(c.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, patch))).To(Succeed())
		Expect(node.Status.Conditions).To(ContainElement(HaveField("LastHeartbeatTime.Time", BeTemporally("==", at))), "the patch was applied")
		return node
	}
	// rawAndAllocatable is a node's recorded raw values and allocatable.
	rawAndAllocatable := func(node *corev1.Node) []string {
		cpu, mem := allocatable(node)
		return []string{node.Annotations[overcommitRawCPU], cpu, node.Annotations[overcommitRawMemory], mem}
	}

	It("multiplies a labelled node's allocatable by the ratios and keeps the raw values", func(ctx SpecContext) {
		node := createNode(ctx, "ratios", map[string]string{overcommitLabel: "true", "role": "worker"},
			map[string]string{overcommitCPURatio: "3", overcommitMemoryRatio: "1.5"})
		kubelet, _ := asNode(node)
		got := heartbeat(ctx, kubelet, node.Name, "4", "8Gi")
		cpu, mem := allocatable(got)
		Expect(cpu).To(Equal("12"))
		Expect(mem).To(Equal("12Gi"))
		Expect(got.Status.Allocatable.Pods().String()).To(Equal("110"), "other resources are untouched")
		Expect(got.Annotations).To(SatisfyAll(HaveKeyWithValue(overcommitRawCPU, "4"), HaveKeyWithValue(overcommitRawMemory, "8Gi")))
		Expect(got.Labels).To(Equal(map[string]string{overcommitLabel: "true", "role": "worker"}), "labels are never touched")

		By("giving the same result on every heartbeat")
		for range 3 {
			again := heartbeat(ctx, kubelet, node.Name, "4", "8Gi")
			c2, m2 := allocatable(again)
			Expect([]string{c2, m2}).To(Equal([]string{"12", "12Gi"}), "heartbeats must not compound the ratio")
		}
	})

	It("uses the flag defaults without annotations and recomputes from raw values for other writers", func(ctx SpecContext) {
		node := createNode(ctx, "defaults", map[string]string{overcommitLabel: "true"}, nil)
		kubelet, _ := asNode(node)
		got := heartbeat(ctx, kubelet, node.Name, "2", "4Gi")
		cpu, mem := allocatable(got)
		Expect([]string{cpu, mem}).To(Equal([]string{"4", "4Gi"}), "defaults: cpu ratio 2, memory ratio 1")

		By("an admin writing status with other numbers: allocatable comes from the kept raw values")
		admin := heartbeat(ctx, cluster.Client, node.Name, "100", "100Gi")
		cpu, mem = allocatable(admin)
		Expect([]string{cpu, mem}).To(Equal([]string{"4", "4Gi"}))
	})

	It("falls back to no overcommit with a warning for a bad ratio, and never fails the heartbeat", func(ctx SpecContext) {
		node := createNode(ctx, "bad-ratio", map[string]string{overcommitLabel: "true"},
			map[string]string{overcommitCPURatio: "-1", overcommitMemoryRatio: "lots"})
		kubelet, warnings := asNode(node)
		got := heartbeat(ctx, kubelet, node.Name, "4", "8Gi")
		cpu, mem := allocatable(got)
		Expect([]string{cpu, mem}).To(Equal([]string{"4", "8Gi"}))
		Expect(warnings.all()).To(ContainElements(ContainSubstring(overcommitCPURatio), ContainSubstring(overcommitMemoryRatio)))
	})

	It("keeps allocatable at raw times ratio under conditions-only writes with the node's credentials", labelSlow, func(ctx SpecContext) {
		node := createNode(ctx, "partial", map[string]string{overcommitLabel: "true"},
			map[string]string{overcommitCPURatio: "3", overcommitMemoryRatio: "1.5"})
		kubelet, warnings := asNode(node)
		got := heartbeat(ctx, kubelet, node.Name, "4", "8Gi")
		Expect(rawAndAllocatable(got)).To(Equal([]string{"4", "12", "8Gi", "12Gi"}))

		By("patching only a condition, as node-problem-detector does, several times")
		at := time.Now().Truncate(time.Second)
		for i := range 4 {
			got = conditionsOnly(ctx, kubelet, node.Name, at.Add(time.Duration(i)*time.Second))
			Expect(rawAndAllocatable(got)).To(Equal([]string{"4", "12", "8Gi", "12Gi"}),
				"write %d: raw values and allocatable stay 4 and 12 CPUs, 8Gi and 12Gi; a partial write must not compound the ratio", i+1)
		}
		Consistently(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(node), got)).To(Succeed())
			g.Expect(rawAndAllocatable(got)).To(Equal([]string{"4", "12", "8Gi", "12Gi"}))
		}).Should(Succeed())

		By("reporting a new allocatable as the kubelet does: it becomes the raw value")
		got = heartbeat(ctx, kubelet, node.Name, "6", "8Gi")
		Expect(rawAndAllocatable(got)).To(Equal([]string{"6", "18", "8Gi", "12Gi"}))
		got = conditionsOnly(ctx, kubelet, node.Name, at.Add(time.Minute))
		Expect(rawAndAllocatable(got)).To(Equal([]string{"6", "18", "8Gi", "12Gi"}))
		Expect(warnings.all()).To(BeEmpty())
	})

	It("leaves an allocatable too large to overcommit at raw with a warning, and other writers still succeed", func(ctx SpecContext) {
		node := createNode(ctx, "huge", map[string]string{overcommitLabel: "true"}, nil)
		kubelet, warnings := asNode(node)

		By("reporting 9223372036854775807 CPUs, past int64 in millicores, and 1e30 bytes of memory")
		got := heartbeat(ctx, kubelet, node.Name, "9223372036854775807", "1e30")
		Expect(rawAndAllocatable(got)).To(Equal([]string{"9223372036854775807", "9223372036854775807", "1e30", "1e30"}),
			"allocatable is left at raw, not wrapped around")
		Expect(warnings.all()).To(ContainElements(
			ContainSubstring("cpu allocatable 9223372036854775807 times ratio 2 overflows"),
			ContainSubstring("memory allocatable 1e30 times ratio 1 overflows")))

		By("writing status as an admin, from the huge raw values")
		adminCfg := rest.CopyConfig(cluster.Config)
		adminWarnings := &warningCollector{}
		adminCfg.WarningHandler = adminWarnings
		admin, err := client.New(adminCfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		got = conditionsOnly(ctx, admin, node.Name, time.Now().Truncate(time.Second))
		Expect(rawAndAllocatable(got)).To(Equal([]string{"9223372036854775807", "9223372036854775807", "1e30", "1e30"}))
		Expect(adminWarnings.all()).To(ContainElement(ContainSubstring("cpu allocatable 9223372036854775807 times ratio 2 overflows")))

		By("reporting sane amounts again as the kubelet")
		got = heartbeat(ctx, kubelet, node.Name, "4", "8Gi")
		Expect(rawAndAllocatable(got)).To(Equal([]string{"4", "8", "8Gi", "8Gi"}))
	})

	It("leaves unlabelled nodes untouched", func(ctx SpecContext) {
		node := createNode(ctx, "plain", nil, map[string]string{overcommitCPURatio: "3"})
		kubelet, _ := asNode(node)
		got := heartbeat(ctx, kubelet, node.Name, "4", "8Gi")
		cpu, mem := allocatable(got)
		Expect([]string{cpu, mem}).To(Equal([]string{"4", "8Gi"}))
		Expect(got.Annotations).NotTo(HaveKey(overcommitRawCPU))
	})
})
