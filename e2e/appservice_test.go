package e2e

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	"github.com/kubeharness/kubeharness/operator/controller"
)

var _ = Describe("AppService", labelAppService, func() {
	ns := specNamespace("appservice")

	children := func(g Gomega, ctx context.Context, app *appv1.AppService) (*appsv1.Deployment, *corev1.Service) {
		d, svc := &appsv1.Deployment{}, &corev1.Service{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), d)).To(Succeed())
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), svc)).To(Succeed())
		return d, svc
	}
	ownedBy := func(app *appv1.AppService) OmegaMatcher {
		return HaveField("ObjectMeta.OwnerReferences", ContainElement(SatisfyAll(
			HaveField("UID", app.UID), HaveField("Kind", "AppService"),
			HaveField("Controller", ptr.To(true)), HaveField("BlockOwnerDeletion", ptr.To(true)))))
	}

	It("becomes an owned Deployment and NodePort Service with the spec's image, env, resources and ports", func(ctx SpecContext) {
		res := corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
		app := MakeAppService("web", *ns, "nginx:1.27").Size(3).Env("MODE", "demo").Resources(res).
			Ports(corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}).Obj()
		Expect(cluster.Client.Create(ctx, app)).To(Succeed())
		Eventually(func(g Gomega) {
			d, svc := children(g, ctx, app)
			g.Expect(d).To(ownedBy(app))
			g.Expect(svc).To(ownedBy(app))
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(3))))
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Name).To(Equal(controller.AppContainerName))
			g.Expect(c.Image).To(Equal("nginx:1.27"))
			g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "MODE", Value: "demo"}))
			g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("50m"))
			g.Expect(c.Ports).To(ContainElement(HaveField("ContainerPort", int32(8080))))
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
			g.Expect(svc.Spec.Ports).To(ContainElement(SatisfyAll(HaveField("Port", int32(80)),
				HaveField("TargetPort", intstr.FromInt32(8080)), HaveField("NodePort", BeNumerically(">=", 30000)))))
			g.Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
		}).Should(Succeed())

		By("writing status for the current generation")
		Eventually(func(g Gomega) {
			cur := &appv1.AppService{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			g.Expect(cur.Status.Conditions).To(ContainElement(HaveField("Type", string(appsv1.DeploymentAvailable))))
			d, _ := children(g, ctx, app)
			g.Expect(cur.Status.Replicas).To(Equal(d.Status.Replicas))
			g.Expect(cur.Status.ReadyReplicas).To(Equal(d.Status.ReadyReplicas))
		}).Should(Succeed())
	})

	It("follows a size change and repairs drift on its children", func(ctx SpecContext) {
		app := MakeAppService("scaled", *ns, "nginx:1.27").Obj()
		Expect(cluster.Client.Create(ctx, app)).To(Succeed())
		Eventually(func(g Gomega) { children(g, ctx, app) }).Should(Succeed())

		patch := client.MergeFrom(app.DeepCopy())
		app.Spec.Size = ptr.To[int32](5)
		Expect(cluster.Client.Patch(ctx, app, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			d, _ := children(g, ctx, app)
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(5))))
		}).Should(Succeed())

		By("someone editing the Deployment's image and replicas and the Service's type")
		Eventually(func() error {
			d := &appsv1.Deployment{}
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), d); err != nil {
				return err
			}
			d.Spec.Replicas = ptr.To[int32](1)
			d.Spec.Template.Spec.Containers[0].Image = "drifted:latest"
			return cluster.Client.Update(ctx, d)
		}).Should(Succeed())
		Eventually(func() error {
			svc := &corev1.Service{}
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), svc); err != nil {
				return err
			}
			svc.Spec.Type = corev1.ServiceTypeClusterIP
			for i := range svc.Spec.Ports {
				svc.Spec.Ports[i].NodePort = 0
			}
			return cluster.Client.Update(ctx, svc)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			d, svc := children(g, ctx, app)
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(5))))
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.27"))
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
		}).Should(Succeed())

		By("someone deleting the Service")
		_, svc := children(Default, ctx, app)
		Expect(cluster.Client.Delete(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			_, again := children(g, ctx, app)
			g.Expect(again.UID).NotTo(Equal(svc.UID))
		}).Should(Succeed())
	})

	It("removes its children through the garbage collector when deleted", labelDeletion, func(ctx SpecContext) {
		app := MakeAppService("removed", *ns, "nginx:1.27").Obj()
		Expect(cluster.Client.Create(ctx, app)).To(Succeed())
		var d *appsv1.Deployment
		var svc *corev1.Service
		Eventually(func(g Gomega) { d, svc = children(g, ctx, app) }).Should(Succeed())
		Expect(cluster.Client.Delete(ctx, app, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		for _, obj := range []client.Object{d, svc} {
			Eventually(func() bool {
				return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
			}).WithTimeout(operatortest.GarbageCollection).Should(BeTrue(), "%T %s was not garbage-collected", obj, obj.GetName())
		}
	})

	DescribeTable("rejects bad specs at admission with a clear message naming the field",
		func(ctx SpecContext, mutate func(*appv1.AppService), field, message string) {
			app := MakeAppService("bad", *ns, "nginx:1.27").Obj()
			mutate(app)
			err := cluster.Client.Create(ctx, app)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(SatisfyAll(ContainSubstring(field), ContainSubstring(message)))
		},
		Entry("negative size", func(a *appv1.AppService) { a.Spec.Size = ptr.To[int32](-1) }, "spec.size", "greater than or equal to 0"),
		Entry("size over 100", func(a *appv1.AppService) { a.Spec.Size = ptr.To[int32](1000) }, "spec.size", "less than or equal to 100"),
		Entry("no image", func(a *appv1.AppService) { a.Spec.Image = "" }, "spec.image", ""),
		Entry("image with spaces", func(a *appv1.AppService) { a.Spec.Image = "not an image" }, "spec.image", "should match"),
		Entry("no ports", func(a *appv1.AppService) { a.Spec.Ports = nil }, "spec.ports", ""),
		Entry("port out of range", func(a *appv1.AppService) { a.Spec.Ports[0].Port = 70000 }, "spec.ports", "between 1 and 65535"),
		Entry("nodePort outside the NodePort range", func(a *appv1.AppService) { a.Spec.Ports[0].NodePort = 80 }, "spec.ports", "30000-32767"),
		Entry("duplicate ports", func(a *appv1.AppService) {
			a.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80}}
		}, "spec.ports", "unique"),
		Entry("targetPort out of range", func(a *appv1.AppService) { a.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) }, "spec.ports[0].targetPort", "between 1 and 65535"),
		Entry("targetPort naming another port", func(a *appv1.AppService) { a.Spec.Ports[0].TargetPort = intstr.FromString("admin") }, "spec.ports[0].targetPort", "the port's own name"),
		Entry("port name over 15 characters", func(a *appv1.AppService) { a.Spec.Ports[0].Name = "a-very-long-port-name" }, "spec.ports[0].name", "no more than 15 characters"),
		Entry("upper-case port name", func(a *appv1.AppService) { a.Spec.Ports[0].Name = "HTTP" }, "spec.ports[0].name", "alpha-numeric"),
		Entry("two unnamed ports", func(a *appv1.AppService) {
			a.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 81}}
		}, "spec.ports[0].name", "every port needs a name"),
		Entry("duplicate port names", func(a *appv1.AppService) {
			a.Spec.Ports = []corev1.ServicePort{{Name: "web", Port: 80}, {Name: "web", Port: 81}}
		}, "spec.ports[1].name", "Duplicate value"),
		Entry("duplicate nodePorts", func(a *appv1.AppService) {
			a.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, NodePort: 30080}, {Name: "b", Port: 81, NodePort: 30080}}
		}, "spec.ports[1].nodePort", "Duplicate value"),
		Entry("request above its limit", func(a *appv1.AppService) {
			a.Spec.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}
		}, "spec.resources.requests[cpu]", "less than or equal to the cpu limit 500m"),
	)

	It("accepts a valid spec at the edges of the rules", func(ctx SpecContext) {
		app := MakeAppService("edges", *ns, "nginx:1.27").Ports(
			corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
			corev1.ServicePort{Name: "metrics-tls-123", Port: 9443, TargetPort: intstr.FromInt32(65535)},
		).Resources(corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		}).Obj()
		Expect(cluster.Client.Create(ctx, app)).To(Succeed())
	})

	It("says in its status when the API server refuses a child, and then stays quiet", labelSlow, func(ctx SpecContext) {
		taken := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: *ns},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 31234}}},
		}
		Expect(cluster.Client.Create(ctx, taken)).To(Succeed())
		app := MakeAppService("clash", *ns, "nginx:1.27").Ports(corev1.ServicePort{Name: "http", Port: 80, NodePort: 31234}).Obj()
		Expect(cluster.Client.Create(ctx, app)).To(Succeed())
		var cur *appv1.AppService
		Eventually(func(g Gomega) {
			cur = &appv1.AppService{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), cur)).To(Succeed())
			c := meta.FindStatusCondition(cur.Status.Conditions, controller.ConditionReconciled)
			g.Expect(c).NotTo(BeNil(), "conditions: %+v", cur.Status.Conditions)
			g.Expect(c.Reason).To(Equal(controller.ReasonChildRejected))
			g.Expect(c.Message).To(ContainSubstring("31234"))
		}).Should(Succeed())
		// The Deployment controller's status writes reach the AppService's
		// status for a moment; after that it must stay quiet although the
		// Service still cannot be created.
		Eventually(func(g Gomega) {
			settled := &appv1.AppService{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), settled)).To(Succeed())
			g.Consistently(func(g Gomega) {
				again := &appv1.AppService{}
				g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(app), again)).To(Succeed())
				g.Expect(again.ResourceVersion).To(Equal(settled.ResourceVersion))
				g.Expect(meta.FindStatusCondition(again.Status.Conditions, controller.ConditionReconciled)).To(
					HaveField("Reason", controller.ReasonChildRejected))
			}).Should(Succeed())
		}).Should(Succeed())
	})

	It("shows its printer columns", func(ctx SpecContext) {
		app := MakeAppService("columns", *ns, "nginx:1.27").Obj()
		Expect(cluster.Client.Create(ctx, app)).To(Succeed())
		table, err := cluster.Clientset.Discovery().RESTClient().Get().
			AbsPath(fmt.Sprintf("/apis/%s/namespaces/%s/appservices/%s", appv1.GroupVersion.String(), *ns, app.Name)).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, col := range []string{`"name":"Image"`, `"name":"Size"`, `"name":"Ready"`, `"name":"Age"`} {
			Expect(string(table)).To(ContainSubstring(col))
		}
	})
})
