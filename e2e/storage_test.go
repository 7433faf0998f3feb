package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
)

// localPathProvisioner is the provisioner of kind's default StorageClass,
// on the stock node image and on the offline one alike.
const localPathProvisioner = "rancher.io/local-path"

// What users of stock kind rely on: a default StorageClass that provisions
// volumes on demand.
var _ = Describe("storage on a real cluster", labelCluster, labelStorage, func() {
	BeforeEach(func() {
		requires[operatortest.RealNodes]("kubelets and a volume provisioner (PROVIDER=kind)")
	})
	ns := specNamespace("storage")

	It("binds a PersistentVolumeClaim of the default StorageClass, keeps what a Pod wrote for the next Pod, and deletes the volume with the claim", func(ctx SpecContext) {
		By("finding one default StorageClass, provisioned by local-path")
		classes := &storagev1.StorageClassList{}
		Expect(cluster.Client.List(ctx, classes)).To(Succeed())
		var defaults []storagev1.StorageClass
		for _, sc := range classes.Items {
			if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
				defaults = append(defaults, sc)
			}
		}
		Expect(defaults).To(HaveLen(1), "exactly one default StorageClass")
		Expect(defaults[0].Provisioner).To(Equal(localPathProvisioner))

		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "notes", Namespace: *ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
			},
		}
		Expect(cluster.Client.Create(ctx, pvc)).To(Succeed())

		text := "written in " + *ns + " at " + time.Now().UTC().Format(time.RFC3339Nano)
		By("a Pod writing to the volume (the claim binds once it is scheduled)")
		writer := volumePod("writer", *ns, pvc.Name, "write", "/data/note", text)
		Expect(cluster.Client.Create(ctx, writer)).To(Succeed())
		succeeded(ctx, writer)
		Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
		Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		pv := &corev1.PersistentVolume{}
		Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		Expect(pv.Annotations).To(HaveKeyWithValue("pv.kubernetes.io/provisioned-by", localPathProvisioner))
		Expect(pv.Spec.NodeAffinity).NotTo(BeNil(), "a local volume is tied to its node")

		By("the next Pod reading what the first wrote")
		reader := volumePod("reader", *ns, pvc.Name, "cat", "/data/note")
		Expect(cluster.Client.Create(ctx, reader)).To(Succeed())
		succeeded(ctx, reader)
		Expect(podLog(ctx, reader)).To(Equal(text))

		By("deleting the claim: the provisioner removes the volume (reclaim policy Delete)")
		for _, p := range []*corev1.Pod{writer, reader} {
			Expect(cluster.Client.Delete(ctx, p)).To(Succeed())
		}
		Expect(cluster.Client.Delete(ctx, pvc)).To(Succeed())
		Eventually(func() error {
			return cluster.Client.Get(ctx, client.ObjectKey{Name: pv.Name}, &corev1.PersistentVolume{})
		}).WithTimeout(podRunning).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "PersistentVolume %s was not deleted", pv.Name)
	})
})

// volumePod runs the smoke image with args, the claim mounted at /data.
func volumePod(name, ns, claim string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: name, Image: deploy.SmokeImage, ImagePullPolicy: corev1.PullNever, Args: args,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// succeeded waits until pod ran to completion, and fails at once with its
// log and events when it failed.
func succeeded(ctx context.Context, pod *corev1.Pod) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		if pod.Status.Phase == corev1.PodFailed {
			StopTrying("Pod " + pod.Name + " failed; its log:\n" + podLog(ctx, pod)).Now()
		}
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), "Pod %s: %s", pod.Name, podConditions(pod))
	}).WithTimeout(podRunning).WithPolling(time.Second).Should(Succeed())
}

// podConditions sums up why a Pod is not done: its conditions' reasons and
// messages (Unschedulable while the claim waits, say).
func podConditions(pod *corev1.Pod) string {
	s := string(pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			s += "; " + string(c.Type) + ": " + c.Message
		}
	}
	return s
}
