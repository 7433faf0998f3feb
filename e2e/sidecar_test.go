package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	sidecarInitName = "kubeharness-init"
	sidecarName     = "kubeharness-sidecar"
)

func makePod(name, namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
	}
}

func containerNames(cs []corev1.Container) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

var _ = Describe("sidecar injector", labelSidecar, func() {
	ns := specNamespace("sidecar")
	var labelled string

	BeforeEach(func(ctx SpecContext) {
		labelled = enterNamespace(ctx, "sidecar-enabled", map[string]string{"kubeharness.dev/sidecar-injection": "enabled"})
	})

	injected := func(pod *corev1.Pod) {
		GinkgoHelper()
		Expect(containerNames(pod.Spec.InitContainers)).To(ContainElement(sidecarInitName))
		Expect(containerNames(pod.Spec.Containers)).To(Equal([]string{"app", sidecarName}))
	}
	notInjected := func(pod *corev1.Pod) {
		GinkgoHelper()
		Expect(pod.Spec.InitContainers).To(BeEmpty())
		Expect(containerNames(pod.Spec.Containers)).To(Equal([]string{"app"}))
	}

	It("injects an init container and a sidecar into a Pod created in a labelled namespace", func(ctx SpecContext) {
		pod := makePod("named", labelled)
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		injected(pod)
	})

	It("keeps a Pod that meets the restricted Pod Security Standard admissible in a namespace that enforces it", func(ctx SpecContext) {
		enforced := enterNamespace(ctx, "sidecar-restricted", map[string]string{
			"kubeharness.dev/sidecar-injection":  "enabled",
			"pod-security.kubernetes.io/enforce": "restricted",
		})
		pod := makePod("compliant", enforced)
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
		By("checking that the Pod alone is compliant: a dry run in a namespace that enforces restricted without injection")
		plain := enterNamespace(ctx, "restricted-plain", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		alone := pod.DeepCopy()
		alone.Namespace = plain
		Expect(cluster.Client.Create(ctx, alone, client.DryRunAll)).To(Succeed())

		Expect(cluster.Client.Create(ctx, pod)).To(Succeed(), "the injected containers broke Pod Security")
		injected(pod)
		for _, c := range append(pod.Spec.InitContainers[:1:1], pod.Spec.Containers[1]) {
			Expect(c.SecurityContext).NotTo(BeNil(), "container %s", c.Name)
			Expect(c.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), "container %s", c.Name)
			Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), "container %s", c.Name)
		}
	})

	It("injects into a Pod named by generateName", func(ctx SpecContext) {
		pod := makePod("", labelled)
		pod.GenerateName = "generated-"
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		Expect(pod.Name).To(HavePrefix("generated-"))
		injected(pod)
	})

	It("leaves a Pod alone in a namespace without the label", func(ctx SpecContext) {
		pod := makePod("unlabelled", *ns)
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		notInjected(pod)
	})

	It("leaves a Pod that opts out alone, by name and by generateName", func(ctx SpecContext) {
		for _, name := range []string{"opted-out", ""} {
			pod := makePod(name, labelled)
			if name == "" {
				pod.GenerateName = "opted-out-"
			}
			pod.Annotations = map[string]string{"sidecar.kubeharness.dev/inject": "false"}
			Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
			notInjected(pod)
		}
	})

	It("skips hostNetwork Pods", func(ctx SpecContext) {
		pod := makePod("host", labelled)
		pod.Spec.HostNetwork = true
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		notInjected(pod)
	})

	It("never injects on UPDATE, and an injected Pod is left as it is", func(ctx SpecContext) {
		pod := makePod("updated", labelled)
		Expect(cluster.Client.Create(ctx, pod)).To(Succeed())
		injected(pod)
		before := pod.DeepCopy()
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Labels = map[string]string{"touched": "yes"}
		Expect(cluster.Client.Patch(ctx, pod, patch)).To(Succeed())
		Expect(pod.Spec.InitContainers).To(Equal(before.Spec.InitContainers))
		Expect(pod.Spec.Containers).To(Equal(before.Spec.Containers))
	})
})
