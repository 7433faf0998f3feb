package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	vmop "github.com/kubeharness/kubeharness/operator/vm"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// vmTenantRules grant everything on VirtualMachines, and nothing else.
var vmTenantRules = []rbacv1.PolicyRule{{
	APIGroups: []string{cloudv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachines"}, Verbs: []string{rbacv1.VerbAll},
}}

// orphanEvents lists the OrphanRemoved Events in ns about the
// VirtualMachine of uid.
func orphanEvents(ctx context.Context, c client.Client, ns, uid string) ([]string, error) {
	list := &corev1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var msgs []string
	for _, e := range list.Items {
		if e.Reason == vmop.ReasonOrphanRemoved && string(e.InvolvedObject.UID) == uid {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs, nil
}

// A tenant holds every verb on VirtualMachines in its namespace, and
// nothing else: the finalizer is its to remove, the spec its to write.
var _ = Describe("VirtualMachine tenants", labelVM, func() {
	ns := specNamespace("vm-sec")
	var tenant client.Client
	BeforeEach(func(ctx SpecContext) {
		if cluster.VMDriver == "" {
			Skip("no VirtualMachine controller runs on this provider yet")
		}
		if cluster.VMDriver == driver.DockerDriverName {
			DeferCleanup(removeDockerServers, ns)
		}
		t, err := operatortest.NewTenant(ctx, cluster.Client, cluster.Config, scheme.New(), *ns, "vm-tenant-"+*ns, vmTenantRules...)
		Expect(err).NotTo(HaveOccurred())
		tenant = t.Client
	})

	// serverUIDs lists the UIDs of the VirtualMachines that have a server,
	// as the driver tells.
	serverUIDs := func(ctx context.Context) ([]string, error) {
		var uids []string
		if cluster.FakeVMs != nil {
			servers, err := cluster.FakeVMs.List()
			if err != nil {
				return nil, err
			}
			for _, s := range servers {
				if !s.Foreign {
					uids = append(uids, s.Machine.UID)
				}
			}
			return uids, nil
		}
		docker, err := vmfixture.NewDockerClient()
		if err != nil {
			return nil, err
		}
		defer docker.Close()
		list, err := dockerContainers(ctx, docker, driver.LabelManagedBy+"="+driver.ManagedBy)
		if err != nil {
			return nil, err
		}
		for _, c := range list {
			uids = append(uids, c.Labels[driver.LabelUID])
		}
		return uids, nil
	}
	active := func(ctx context.Context, c client.Client, vm *cloudv1.VirtualMachine) *cloudv1.VirtualMachine {
		GinkgoHelper()
		cur := &cloudv1.VirtualMachine{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vm), cur)).To(Succeed())
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive), "reason: %s", cur.Status.Reason)
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		return cur
	}

	It("cannot leave a server behind by removing the finalizer and deleting, and can create the name again", func(ctx SpecContext) {
		vm := makeVM("stripped", *ns, "500m", "32Mi")
		Expect(tenant.Create(ctx, vm)).To(Succeed())
		first := active(ctx, tenant, vm)
		Expect(serverUIDs(ctx)).To(ContainElement(string(first.UID)))

		By("removing the finalizer as the tenant, and deleting the very version without it")
		// The delete's precondition is the version the tenant wrote: when
		// the controller has put the finalizer back in between, the delete
		// conflicts and the tenant tries again, so the VirtualMachine goes
		// without the finalizer ever seeing it deleted. The controller
		// answers each removal within milliseconds, and under load it can
		// win many tries in a row (client-go's DefaultRetry, 5 tries in
		// 50 ms, lost them all): the tenant keeps trying for as long as a
		// reconcile may take.
		Eventually(func() error {
			cur := &cloudv1.VirtualMachine{}
			if err := tenant.Get(ctx, client.ObjectKeyFromObject(vm), cur); err != nil {
				return err
			}
			cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == vmop.Finalizer })
			if err := tenant.Update(ctx, cur); err != nil {
				return err
			}
			return tenant.Delete(ctx, cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion})
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		Eventually(func() error {
			return tenant.Get(ctx, client.ObjectKeyFromObject(vm), &cloudv1.VirtualMachine{})
		}).WithTimeout(operatortest.Reconcile).Should(Satisfy(apierrors.IsNotFound))
		Eventually(serverUIDs).WithArguments(ctx).WithTimeout(operatortest.Reconcile).ShouldNot(ContainElement(string(first.UID)),
			"the server of the deleted VirtualMachine is left")

		By("creating the same name again")
		again := makeVM("stripped", *ns, "500m", "32Mi")
		Expect(tenant.Create(ctx, again)).To(Succeed())
		second := active(ctx, tenant, again)
		Expect(second.UID).NotTo(Equal(first.UID))
	})

	It("gets its VirtualMachine a server when one of a gone VirtualMachine of the same name holds the name", func(ctx SpecContext) {
		if cluster.FakeVMs == nil {
			Skip(fmt.Sprintf("plants a server in the fake driver; this run uses %q (%s)", cluster.VMDriver, operatortest.VMDriverEnv))
		}
		goneUID := "uid-gone-" + *ns
		orphan, err := cluster.FakeVMs.AddForeign(*ns, "reborn", goneUID)
		Expect(err).NotTo(HaveOccurred())
		vm := makeVM("reborn", *ns, "500m", "32Mi")
		Expect(tenant.Create(ctx, vm)).To(Succeed())
		cur := active(ctx, tenant, vm)
		Expect(cur.Status.Server.ID).NotTo(Equal(orphan))
		Expect(serverUIDs(ctx)).NotTo(ContainElement(goneUID))
		Eventually(orphanEvents).WithArguments(ctx, cluster.Client, *ns, goneUID).WithTimeout(operatortest.Reconcile).
			Should(ContainElement(ContainSubstring(*ns + "/reborn")))
	})

	It("gives namespace a's b-c and namespace a-b's c their own servers, and neither the other's IDs", func(ctx SpecContext) {
		other := *ns + "-b"
		Expect(cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) error { return operatortest.DeleteNamespace(ctx, cluster.Client, other) })
		if cluster.VMDriver == driver.DockerDriverName {
			DeferCleanup(removeDockerServers, &other)
		}
		t2, err := operatortest.NewTenant(ctx, cluster.Client, cluster.Config, scheme.New(), other, "vm-tenant-"+other, vmTenantRules...)
		Expect(err).NotTo(HaveOccurred())

		first := makeVM("b-c", *ns, "500m", "32Mi")
		Expect(tenant.Create(ctx, first)).To(Succeed())
		a := active(ctx, tenant, first)
		second := makeVM("c", other, "500m", "32Mi")
		Expect(t2.Client.Create(ctx, second)).To(Succeed())
		b := active(ctx, t2.Client, second)
		Expect(b.Status.Server.ID).NotTo(Equal(a.Status.Server.ID))
		for _, vm := range []*cloudv1.VirtualMachine{a, b} {
			Expect(vm.Status.Reason).NotTo(ContainSubstring(string(a.UID)))
			Expect(vm.Status.Reason).NotTo(ContainSubstring(string(b.UID)))
		}
		Expect(serverUIDs(ctx)).To(ContainElements(string(a.UID), string(b.UID)))
		if cluster.FakeVMs != nil {
			for _, vm := range []*cloudv1.VirtualMachine{a, b} {
				s, ok := serverOf(Default, cluster.FakeVMs, string(vm.UID))
				Expect(ok).To(BeTrue())
				Expect(s.Server.ID).To(Equal(vm.Status.Server.ID), "%s/%s shows another server", vm.Namespace, vm.Name)
			}
		}
	})

	It("refuses limits above what the host has, without telling its size", func(ctx SpecContext) {
		for _, memory := range []string{"1Ei", "8Ei"} {
			vm := makeVM("huge-"+strings.ToLower(memory), *ns, "500m", memory)
			Expect(tenant.Create(ctx, vm)).To(Succeed())
			Eventually(func(g Gomega) {
				cur := &cloudv1.VirtualMachine{}
				g.Expect(tenant.Get(ctx, client.ObjectKeyFromObject(vm), cur)).To(Succeed())
				g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineFailed))
				g.Expect(cur.Status.Conditions).To(ContainElement(HaveField("Reason", vmop.ReasonTooLarge)))
				g.Expect(cur.Status.Reason).To(ContainSubstring("is more than a server can be given here"))
				g.Expect(cur.Status.Server.ID).To(BeEmpty())
				g.Expect(serverUIDs(ctx)).NotTo(ContainElement(string(cur.UID)))
			}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		}
	})

	It("cannot name an image by a bare name or ID prefix", func(ctx SpecContext) {
		for _, image := range []string{"c", "c8d36865e66a", "sha256"} {
			vm := makeVM("by-id", *ns, "500m", "32Mi")
			vm.Spec.Image = image
			err := tenant.Create(ctx, vm)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "image %q: %v", image, err)
			Expect(err.Error()).To(ContainSubstring("spec.image"))
		}
		vm := makeVM("tagged", *ns, "500m", "32Mi")
		vm.Spec.Image = vmfixture.VMImage
		Expect(tenant.Create(ctx, vm)).To(Succeed())
		active(ctx, tenant, vm)
	})
})
