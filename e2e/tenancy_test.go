package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/controller"
)

// The operator holds more privilege than the people who create its objects.
// These specs act as a tenant holding only a namespace Role over
// kubeharness's kinds, and prove that her objects never make the operator
// touch what she could not.
var _ = Describe("a tenant's objects", labelTenancy, labelRBAC, func() {
	ns := specNamespace("tenancy")

	tenant := func(ctx SpecContext, user string, extra ...rbacv1.PolicyRule) *operatortest.Tenant {
		rules := append([]rbacv1.PolicyRule{
			{APIGroups: []string{appv1.GroupVersion.Group}, Resources: []string{"appservices"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
			{APIGroups: []string{opsv1.GroupVersion.Group}, Resources: []string{"playbooks"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
		}, extra...)
		t, err := operatortest.NewTenant(ctx, cluster.Client, cluster.Config, scheme.New(), *ns, user, rules...)
		Expect(err).NotTo(HaveOccurred())
		return t
	}
	// conflict matches conditions holding condType False for an ownership
	// conflict whose message names what.
	conflict := func(condType, what string) OmegaMatcher {
		return ContainElement(SatisfyAll(HaveField("Type", condType), HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", controller.ReasonOwnershipConflict), HaveField("Message", ContainSubstring(what))))
	}
	// warned waits for a Warning Event with reason about regarding.
	warned := func(ctx SpecContext, regarding client.Object, kind, reason, mentions string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(cluster.Client.List(ctx, events, client.InNamespace(regarding.GetNamespace()))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Regarding.Kind", kind), HaveField("Regarding.Name", regarding.GetName()),
				HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", reason),
				HaveField("Note", ContainSubstring(mentions)))))
		}).Should(Succeed())
	}

	It("never lets an AppService adopt, rewrite or delete the Deployment and Service an admin made", labelSlow, func(ctx SpecContext) {
		mallory := tenant(ctx, "mallory")

		By("an admin running a Deployment under a privileged ServiceAccount, and a ClusterIP Service")
		labels := map[string]string{"app": "payments"}
		deploy := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: *ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{ServiceAccountName: "payments-admin",
						Containers: []corev1.Container{{Name: "payments", Image: "registry.example/payments:1"}}},
				},
			},
		}
		Expect(cluster.Client.Create(ctx, deploy)).To(Succeed())
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: *ns},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
		}
		Expect(cluster.Client.Create(ctx, svc)).To(Succeed())

		By("the tenant creating an AppService of the same name with her own image")
		as := MakeAppService("payments", *ns, "registry.example/miner:1").Size(5).Obj()
		Expect(mallory.Client.Create(ctx, as)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &appv1.AppService{}
			g.Expect(mallory.Client.Get(ctx, client.ObjectKeyFromObject(as), cur)).To(Succeed())
			g.Expect(cur.Status.Conditions).To(conflict(controller.ConditionReconciled, fmt.Sprintf("Deployment %s/payments", *ns)))
		}).Should(Succeed())
		warned(ctx, as, "AppService", controller.ReasonOwnershipConflict, "Deployment")

		untouched := func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(deploy), d)).To(Succeed())
			g.Expect(d.OwnerReferences).To(BeEmpty())
			g.Expect(d.Generation).To(Equal(deploy.Generation))
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(2))))
			g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal("payments-admin"))
			g.Expect(containerNames(d.Spec.Template.Spec.Containers)).To(Equal([]string{"payments"}))
			s := &corev1.Service{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(svc), s)).To(Succeed())
			g.Expect(s.OwnerReferences).To(BeEmpty())
			g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(s.ResourceVersion).To(Equal(svc.ResourceVersion))
		}
		Consistently(untouched).WithTimeout(operatortest.AfterDecision).Should(Succeed())

		By("the tenant deleting her AppService: the admin's objects stay")
		Expect(mallory.Client.Delete(ctx, as)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(mallory.Client.Get(ctx, client.ObjectKeyFromObject(as), &appv1.AppService{}))
		}).Should(BeTrue())
		Consistently(untouched).WithTimeout(operatortest.AfterDecision).Should(Succeed())
	})

	It("takes the name once the object in the way is gone", func(ctx SpecContext) {
		mallory := tenant(ctx, "mallory")
		blocker := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: *ns},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		Expect(cluster.Client.Create(ctx, blocker)).To(Succeed())
		as := MakeAppService("shop", *ns, "nginx:1.27").Obj()
		Expect(mallory.Client.Create(ctx, as)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &appv1.AppService{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), cur)).To(Succeed())
			g.Expect(cur.Status.Conditions).To(conflict(controller.ConditionReconciled, "Service "+*ns+"/shop"))
		}).Should(Succeed())

		By("the admin deleting the Service in the way")
		Expect(cluster.Client.Delete(ctx, blocker)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &appv1.AppService{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), cur)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, controller.ConditionReconciled)).To(BeTrue(),
				"conditions: %+v", cur.Status.Conditions)
			s := &corev1.Service{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), s)).To(Succeed())
			g.Expect(metav1.IsControlledBy(s, cur)).To(BeTrue())
		}).Should(Succeed())
	})

	It("runs an AppService's Pods with no API token, whatever the Deployment is edited to say", func(ctx SpecContext) {
		mallory := tenant(ctx, "mallory")
		as := MakeAppService("tokenless", *ns, "nginx:1.27").Obj()
		Expect(mallory.Client.Create(ctx, as)).To(Succeed())
		d := &appsv1.Deployment{}
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
			g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(BeEmpty())
		}).Should(Succeed())

		By("someone pointing the owned Deployment at a privileged ServiceAccount")
		Eventually(func() error {
			cur := &appsv1.Deployment{}
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), cur); err != nil {
				return err
			}
			cur.Spec.Template.Spec.ServiceAccountName = "payments-admin"
			cur.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
			return cluster.Client.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(as), d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(BeEmpty())
			g.Expect(d.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		}).Should(Succeed())
	})

	It("refuses an AppService that reads a Secret or ConfigMap its author may not read", func(ctx SpecContext) {
		mallory := tenant(ctx, "mallory")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: *ns}, StringData: map[string]string{"password": "s3cret"}}
		Expect(cluster.Client.Create(ctx, secret)).To(Succeed())
		Expect(mallory.Client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})).To(
			Satisfy(apierrors.IsForbidden), "the tenant can read the Secret herself; the spec proves nothing")

		withSecret := MakeAppService("leak", *ns, "registry.example/miner:1").Obj()
		withSecret.Spec.Envs = []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
		err := mallory.Client.Create(ctx, withSecret)
		Expect(err).To(HaveOccurred(), "an AppService reading a Secret its author may not read was admitted")
		Expect(err.Error()).To(SatisfyAll(
			ContainSubstring("spec.envs[0].valueFrom.secretKeyRef.name"),
			ContainSubstring(fmt.Sprintf("mallory may not get Secret %s/db", *ns))))

		withConfigMap := MakeAppService("leak-cm", *ns, "registry.example/miner:1").Obj()
		withConfigMap.Spec.Envs = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}}}
		err = mallory.Client.Create(ctx, withConfigMap)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.envs[0].valueFrom.configMapKeyRef.name"))

		By("a tenant who may read the Secret may reference it")
		trusted := tenant(ctx, "trent", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}, Verbs: []string{"get"}})
		ok := withSecret.DeepCopy()
		ok.Name = "trusted"
		Expect(trusted.Client.Create(ctx, ok)).To(Succeed())

		By("the tenant changing the image of an AppService that reads the Secret")
		Eventually(func() error {
			cur := &appv1.AppService{}
			if err := mallory.Client.Get(ctx, client.ObjectKeyFromObject(ok), cur); err != nil {
				return err
			}
			cur.Spec.Image = "registry.example/miner:2"
			return mallory.Client.Update(ctx, cur)
		}).Should(MatchError(ContainSubstring("may not get Secret")))

		By("a change that leaves the spec alone is not checked again")
		Eventually(func() error {
			cur := &appv1.AppService{}
			if err := mallory.Client.Get(ctx, client.ObjectKeyFromObject(ok), cur); err != nil {
				return err
			}
			cur.Labels = map[string]string{"team": "shop"}
			return mallory.Client.Update(ctx, cur)
		}).Should(Succeed())
	})

	It("never lets a Playbook adopt, overwrite or delete a ConfigMap named like its notes", labelSlow, func(ctx SpecContext) {
		mallory := tenant(ctx, "mallory")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "runbook" + opsv1.NotesSuffix, Namespace: *ns},
			Data: map[string]string{"abstract": "the admin's own notes"}}
		Expect(cluster.Client.Create(ctx, cm)).To(Succeed())

		pb := MakePlaybook("runbook", *ns).Abstract("mine now").Obj()
		Expect(mallory.Client.Create(ctx, pb)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &opsv1.Playbook{}
			g.Expect(mallory.Client.Get(ctx, client.ObjectKeyFromObject(pb), cur)).To(Succeed())
			g.Expect(cur.Status.Conditions).To(conflict(opsv1.ConditionReady, "ConfigMap "+*ns+"/runbook-notes"))
		}).Should(Succeed())
		warned(ctx, pb, "Playbook", controller.ReasonOwnershipConflict, "ConfigMap")

		untouched := func(g Gomega) {
			cur := &corev1.ConfigMap{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(cm), cur)).To(Succeed())
			g.Expect(cur.OwnerReferences).To(BeEmpty())
			g.Expect(cur.Data).To(Equal(map[string]string{"abstract": "the admin's own notes"}))
		}
		Consistently(untouched).WithTimeout(operatortest.AfterDecision).Should(Succeed())

		By("the tenant deleting her Playbook: it goes, the ConfigMap stays")
		Expect(mallory.Client.Delete(ctx, pb)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pb), &opsv1.Playbook{}))
		}).Should(BeTrue())
		Consistently(untouched).WithTimeout(operatortest.AfterDecision).Should(Succeed())
	})
})
