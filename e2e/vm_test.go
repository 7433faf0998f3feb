package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	dockerclient "github.com/moby/moby/client"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	vmop "github.com/kubeharness/kubeharness/operator/vm"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
	vmclientset "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned"
)

func makeVM(name, ns, cpu, memory string) *cloudv1.VirtualMachine {
	return &cloudv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: cloudv1.VirtualMachineSpec{Resource: cloudv1.VirtualMachineResource{
			CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory),
		}},
	}
}

// getVM reads vm as stored now.
func getVM(g Gomega, ctx context.Context, vm *cloudv1.VirtualMachine) *cloudv1.VirtualMachine {
	cur := &cloudv1.VirtualMachine{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(vm), cur)).To(Succeed())
	return cur
}

// serverOf is the fake driver's server for the VirtualMachine of uid, if
// any.
func serverOf(g Gomega, fake vmfixture.FakeVMs, uid string) (driver.FakeServer, bool) {
	servers, err := fake.List()
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range servers {
		if s.Machine.UID == uid && !s.Foreign {
			return s, true
		}
	}
	return driver.FakeServer{}, false
}

var _ = Describe("VirtualMachine", labelVM, func() {
	var ns *string
	BeforeEach(func() {
		if cluster.VMDriver == driver.DockerDriverName {
			// Registered before the namespace's cleanup, this runs after it,
			// once a failed spec's bundle has its VirtualMachines.
			DeferCleanup(removeDockerServers, ns)
		}
	})
	ns = specNamespace("vm")

	BeforeEach(func() {
		if cluster.VMDriver == "" {
			Skip("no VirtualMachine controller runs on this provider yet")
		}
	})
	needFake := func() vmfixture.FakeVMs {
		if cluster.FakeVMs == nil {
			Skip(fmt.Sprintf("steers the fake driver; this run uses %q (%s)", cluster.VMDriver, operatortest.VMDriverEnv))
		}
		return cluster.FakeVMs
	}
	activeVM := func(ctx context.Context, vm *cloudv1.VirtualMachine) *cloudv1.VirtualMachine {
		GinkgoHelper()
		var cur *cloudv1.VirtualMachine
		Eventually(func(g Gomega) {
			cur = getVM(g, ctx, vm)
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive), "reason: %s", cur.Status.Reason)
			g.Expect(cur.Status.Server.ID).NotTo(BeEmpty())
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		return cur
	}

	It("becomes Active on a server with the resources asked for, shows usage, and lists as kubectl get vms does", func(ctx SpecContext) {
		vm := makeVM("small", *ns, "500m", "64Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		cur := activeVM(ctx, vm)
		Expect(cur.Finalizers).To(ContainElement(vmop.Finalizer))
		Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		Expect(cur.Status.LastUpdateTime).NotTo(BeNil())
		Expect(cur.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", cloudv1.ConditionReady), HaveField("Status", metav1.ConditionTrue))))

		if fake := cluster.FakeVMs; fake != nil {
			s, ok := serverOf(Default, fake, string(cur.UID))
			Expect(ok).To(BeTrue(), "no server for the VirtualMachine's UID")
			Expect(s.Server.ID).To(Equal(cur.Status.Server.ID))
			Expect(s.Machine.CPU.MilliValue()).To(Equal(int64(500)))
			Expect(s.Machine.Memory.Value()).To(Equal(int64(64 << 20)))
			Expect(s.Machine.Image).To(Equal(cluster.VMOptions.DefaultImage))
		}
		Eventually(func(g Gomega) {
			u := getVM(g, ctx, vm).Status.Server.Usage
			g.Expect(u.CPU + u.Memory).To(BeNumerically(">", 0))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())

		By("listing through the API server's table, as kubectl get vms prints it")
		raw, err := cluster.Clientset.Discovery().RESTClient().Get().
			AbsPath("/apis", cloudv1.SchemeGroupVersion.Group, cloudv1.SchemeGroupVersion.Version, "namespaces", *ns, "virtualmachines").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		table := &metav1.Table{}
		Expect(json.Unmarshal(raw, table)).To(Succeed())
		var columns []string
		for _, c := range table.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		Expect(columns).To(Equal([]string{"Name", "Status", "CPU", "Memory", "Age"}))
		Expect(table.Rows).To(HaveLen(1))
		Expect(table.Rows[0].Cells[0]).To(Equal("small"))
		Expect(table.Rows[0].Cells[1]).To(Equal("Active"))
		Expect(table.Rows[0].Cells[2]).To(BeNumerically(">=", 0))
	})

	It("refuses a VirtualMachine without positive resources or with a bad image, naming the field", func(ctx SpecContext) {
		for _, tc := range []struct {
			vm    *cloudv1.VirtualMachine
			field string
		}{
			{makeVM("zero-cpu", *ns, "0", "64Mi"), "spec.resource.cpu"},
			{makeVM("negative-cpu", *ns, "-1", "64Mi"), "spec.resource.cpu"},
			{makeVM("zero-memory", *ns, "1", "0"), "spec.resource.memory"},
			{func() *cloudv1.VirtualMachine {
				vm := makeVM("bad-image", *ns, "1", "64Mi")
				vm.Spec.Image = "UPPER/Case::bad"
				return vm
			}(), "spec.image"},
		} {
			err := cluster.Client.Create(ctx, tc.vm)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.vm.Name, err)
			Expect(err.Error()).To(ContainSubstring(tc.field), tc.vm.Name)
		}
		By("a missing memory")
		u := &cloudv1.VirtualMachine{}
		err := cluster.Clientset.Discovery().RESTClient().Post().
			AbsPath("/apis", cloudv1.SchemeGroupVersion.Group, cloudv1.SchemeGroupVersion.Version, "namespaces", *ns, "virtualmachines").
			SetHeader("Content-Type", "application/json").
			Body([]byte(`{"apiVersion":"cloudnative.kubeharness.dev/v1alpha1","kind":"VirtualMachine","metadata":{"name":"no-memory"},"spec":{"resource":{"cpu":"1"}}}`)).
			Do(ctx).Into(u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.resource.memory"))
	})

	It("removes its server before the VirtualMachine goes", func(ctx SpecContext) {
		vm := makeVM("doomed", *ns, "1", "32Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		cur := activeVM(ctx, vm)
		Expect(cluster.Client.Delete(ctx, cur)).To(Succeed())
		Eventually(func() error {
			return cluster.Client.Get(ctx, client.ObjectKeyFromObject(vm), &cloudv1.VirtualMachine{})
		}).WithTimeout(operatortest.Reconcile).Should(Satisfy(apierrors.IsNotFound))
		if fake := cluster.FakeVMs; fake != nil {
			_, ok := serverOf(Default, fake, string(cur.UID))
			Expect(ok).To(BeFalse(), "the server outlived its VirtualMachine")
		}
	})

	It("reports a driver failure as Failed with the reason, then recovers", labelSlow, func(ctx SpecContext) {
		fake := needFake()
		vm := makeVM("flaky", *ns, "1", "32Mi")
		vm.Spec.Image = "example.test/" + *ns + "/missing:v1"
		Expect(fake.SetImagePresent(vm.Spec.Image, false)).To(Succeed())
		DeferCleanup(fake.SetImagePresent, vm.Spec.Image, true)
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getVM(g, ctx, vm)
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineFailed))
			g.Expect(cur.Status.Reason).To(ContainSubstring(vm.Spec.Image))
			g.Expect(cur.Status.Conditions).To(ContainElement(HaveField("Reason", vmop.ReasonImageNotFound)))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())

		By("retrying every FailedRetry, not in a loop")
		cur := getVM(Default, ctx, vm)
		creates := func() int {
			n := 0
			servers, err := fake.List()
			Expect(err).NotTo(HaveOccurred())
			for _, s := range servers {
				if s.Machine.UID == string(cur.UID) {
					n++
				}
			}
			return n
		}
		calls := func() int {
			c, err := fake.Calls()
			Expect(err).NotTo(HaveOccurred())
			return c.Create
		}
		before := calls()
		window := operatortest.NoHotLoopWindow
		Consistently(func(g Gomega) {
			g.Expect(getVM(g, ctx, vm).ResourceVersion).To(Equal(cur.ResourceVersion))
		}).WithTimeout(window).Should(Succeed())
		// Every controller's creates count here; this spec's VM makes at
		// most one per FailedRetry, others' a handful at most.
		Expect(calls() - before).To(BeNumerically("<=", int(window/cluster.VMOptions.FailedRetry)+1+20))
		Expect(creates()).To(BeZero())

		By("making the server once the image is there")
		Expect(fake.SetImagePresent(vm.Spec.Image, true)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getVM(g, ctx, vm).Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
		}).WithTimeout(cluster.VMOptions.FailedRetry + operatortest.Reconcile).Should(Succeed())
	})

	It("keeps a VirtualMachine at rest between usage refreshes and writes usage that moved", labelSlow, func(ctx SpecContext) {
		fake := needFake()
		Expect(fake.SetUsage(*ns, &driver.Usage{CPU: 12.5, Memory: 25})).To(Succeed())
		DeferCleanup(fake.SetUsage, *ns, (*driver.Usage)(nil))
		vm := makeVM("steady", *ns, "1", "32Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		cur := activeVM(ctx, vm)
		Eventually(func(g Gomega) {
			cur = getVM(g, ctx, vm)
			g.Expect(cur.Status.Server.Usage.CPU).To(Equal(12.5))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		// Two refreshes that read the same usage, then the object as it
		// was: a controller that wrote after every refresh has written by
		// then, whatever the machine's speed.
		s, _ := serverOf(Default, fake, string(cur.UID))
		Eventually(func(g Gomega) {
			now, _ := serverOf(g, fake, string(cur.UID))
			g.Expect(now.UsageCalls).To(BeNumerically(">=", s.UsageCalls+2), "usage is refreshed while the VirtualMachine is at rest")
		}).WithTimeout(2*cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
		Expect(getVM(Default, ctx, vm).ResourceVersion).To(Equal(cur.ResourceVersion), "a refresh that read the same usage rewrote the status")

		Expect(fake.SetUsage(*ns, &driver.Usage{CPU: 80, Memory: 25})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getVM(g, ctx, vm).Status.Server.Usage.CPU).To(Equal(80.0))
		}).WithTimeout(cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
	})

	It("writes usage that moves at most once per refresh, not in a loop", labelSlow, func(ctx SpecContext) {
		vm := makeVM("busy", *ns, "1", "32Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		activeVM(ctx, vm)
		versions := map[string]bool{}
		Consistently(func(g Gomega) {
			versions[getVM(g, ctx, vm).ResourceVersion] = true
		}).WithTimeout(operatortest.NoHotLoopWindow).Should(Succeed())
		refreshes := int(operatortest.NoHotLoopWindow / cluster.VMOptions.UsageRefresh)
		Expect(len(versions)).To(BeNumerically("<=", refreshes+2),
			"%d versions in %s with a usage refresh of %s: the status is rewritten in a loop", len(versions), operatortest.NoHotLoopWindow, cluster.VMOptions.UsageRefresh)
	})

	It("notices a server stopped or removed behind its back and brings it back", labelSlow, func(ctx SpecContext) {
		fake := needFake()
		vm := makeVM("tended", *ns, "1", "32Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		cur := activeVM(ctx, vm)
		first := cur.Status.Server.ID

		Expect(fake.Stop(*ns, vm.Name)).To(BeTrue())
		Eventually(func(g Gomega) {
			s, ok := serverOf(g, fake, string(cur.UID))
			g.Expect(ok).To(BeTrue())
			g.Expect(s.Server.Running).To(BeTrue())
			g.Expect(s.Server.ID).To(Equal(first))
		}).WithTimeout(cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
		Eventually(eventReasons).WithArguments(ctx, *ns, vm.Name).Should(ContainElement(vmop.ReasonServerStopped))

		Expect(fake.Remove(*ns, vm.Name)).To(BeTrue())
		Eventually(func(g Gomega) {
			cur := getVM(g, ctx, vm)
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
			g.Expect(cur.Status.Server.ID).NotTo(Equal(first))
		}).WithTimeout(cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
		Eventually(eventReasons).WithArguments(ctx, *ns, vm.Name).Should(ContainElement(vmop.ReasonServerGone))
	})

	It("never touches a server of the same name it did not create", func(ctx SpecContext) {
		fake := needFake()
		foreign, err := fake.AddForeign(*ns, "squatted", "")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(fake.Remove, *ns, "squatted")
		vm := makeVM("squatted", *ns, "1", "32Mi")
		Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getVM(g, ctx, vm)
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineFailed))
			g.Expect(cur.Status.Conditions).To(ContainElement(HaveField("Reason", vmop.ReasonNotOwned)))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		Expect(cluster.Client.Delete(ctx, vm)).To(Succeed())
		Eventually(func() error {
			return cluster.Client.Get(ctx, client.ObjectKeyFromObject(vm), &cloudv1.VirtualMachine{})
		}).WithTimeout(operatortest.Reconcile).Should(Satisfy(apierrors.IsNotFound))
		Expect(fake.List()).To(ContainElement(SatisfyAll(
			HaveField("Server.ID", foreign), HaveField("Server.Running", true), HaveField("Foreign", true))))
	})

	Context("on the Docker daemon", labelDocker, func() {
		var docker *dockerclient.Client
		BeforeEach(func() {
			if cluster.VMDriver != driver.DockerDriverName {
				Skip(fmt.Sprintf("runs containers; this run uses the %q driver (%s=docker runs it)", cluster.VMDriver, operatortest.VMDriverEnv))
			}
			var err error
			docker, err = vmfixture.NewDockerClient()
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(docker.Close)
		})
		// containerOf is the container of the VirtualMachine with uid,
		// found as the driver finds it: by its UID label.
		containerOf := func(g Gomega, ctx context.Context, uid types.UID) container.InspectResponse {
			GinkgoHelper()
			list, err := dockerContainers(ctx, docker, driver.LabelUID+"="+string(uid))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list).To(HaveLen(1), "containers labelled %s=%s", driver.LabelUID, uid)
			res, err := docker.ContainerInspect(ctx, list[0].ID, dockerclient.ContainerInspectOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			return res.Container
		}

		It("runs a VirtualMachine as a container with its CPU and memory as limits, labelled with its identity", func(ctx SpecContext) {
			vm := makeVM("limits", *ns, "500m", "64Mi")
			Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
			cur := activeVM(ctx, vm)
			c := containerOf(Default, ctx, cur.UID)
			Expect(c.ID).To(Equal(cur.Status.Server.ID))
			Expect(c.Name).To(Equal("/" + driver.ContainerName(*ns, vm.Name)))
			Expect(c.Config.Image).To(Equal(vmfixture.VMImage))
			Expect(c.HostConfig.NanoCPUs).To(Equal(int64(500_000_000)))
			Expect(c.HostConfig.Memory).To(Equal(int64(64 << 20)))
			Expect(c.Config.Labels).To(SatisfyAll(
				HaveKeyWithValue(driver.LabelNamespace, *ns),
				HaveKeyWithValue(driver.LabelName, vm.Name),
				HaveKeyWithValue(driver.LabelUID, string(cur.UID)),
				HaveKeyWithValue(driver.LabelManagedBy, driver.ManagedBy)))
			Expect(c.State.Running).To(BeTrue(), "container state %s", c.State.Status)
			Expect(cur.Status.Server.State).To(Equal(driver.StateRunning))
		})

		It("reads the container's CPU and memory use into the status, and the numbers move", func(ctx SpecContext) {
			vm := makeVM("busy", *ns, "500m", "64Mi")
			Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
			activeVM(ctx, vm)
			var first cloudv1.ServerUsage
			Eventually(func(g Gomega) {
				first = getVM(g, ctx, vm).Status.Server.Usage
				g.Expect(first.CPU).To(BeNumerically(">", 0))
				g.Expect(first.Memory).To(BeNumerically(">", 0))
			}).WithTimeout(cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
			// 8 MiB held of 64Mi, 3 ms busy of every 100 ms of 500m: far
			// from either limit.
			Expect(first.CPU).To(BeNumerically("<", 100))
			Expect(first.Memory).To(BeNumerically("<", 100))
			Eventually(func(g Gomega) {
				u := getVM(g, ctx, vm).Status.Server.Usage
				g.Expect(u).NotTo(Equal(first))
				g.Expect(u.CPU).To(BeNumerically(">", 0))
			}).WithTimeout(2*cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
		})

		It("removes the container before the VirtualMachine goes", func(ctx SpecContext) {
			vm := makeVM("removed", *ns, "500m", "64Mi")
			Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
			cur := activeVM(ctx, vm)
			id := containerOf(Default, ctx, cur.UID).ID
			Expect(cluster.Client.Delete(ctx, cur)).To(Succeed())
			Eventually(func() error {
				return cluster.Client.Get(ctx, client.ObjectKeyFromObject(vm), &cloudv1.VirtualMachine{})
			}).WithTimeout(operatortest.Reconcile).Should(Satisfy(apierrors.IsNotFound))
			// The finalizer went after the container: no waiting here.
			_, err := docker.ContainerInspect(ctx, id, dockerclient.ContainerInspectOptions{})
			Expect(cerrdefs.IsNotFound(err)).To(BeTrue(), "container %s after its VirtualMachine went: %v", id, err)
			Expect(dockerContainers(ctx, docker, driver.LabelUID+"="+string(cur.UID))).To(BeEmpty())
		})

		It("notices a container removed behind its back and makes a new one", func(ctx SpecContext) {
			vm := makeVM("recreated", *ns, "500m", "64Mi")
			Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
			cur := activeVM(ctx, vm)
			first := containerOf(Default, ctx, cur.UID).ID

			_, err := docker.ContainerRemove(ctx, first, dockerclient.ContainerRemoveOptions{Force: true})
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				cur := getVM(g, ctx, vm)
				g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
				g.Expect(cur.Status.Server.ID).NotTo(Equal(first))
				c := containerOf(g, ctx, cur.UID)
				g.Expect(c.ID).To(Equal(cur.Status.Server.ID))
				g.Expect(c.State.Running).To(BeTrue())
			}).WithTimeout(cluster.VMOptions.UsageRefresh + operatortest.Reconcile).Should(Succeed())
			// A look while Docker is still removing it sees the container
			// there, not running.
			Eventually(eventReasons).WithArguments(ctx, *ns, vm.Name).Should(ContainElement(BeElementOf(vmop.ReasonServerGone, vmop.ReasonServerStopped)))
		})

		It("leaves a container of the same name it did not create untouched, and the VirtualMachine Failed", func(ctx SpecContext) {
			vm := makeVM("squatted", *ns, "500m", "64Mi")
			name := driver.ContainerName(*ns, vm.Name)
			res, err := docker.ContainerCreate(ctx, dockerclient.ContainerCreateOptions{
				Name: name, Config: &container.Config{Image: vmfixture.VMImage},
			})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) error {
				_, err := docker.ContainerRemove(ctx, res.ID, dockerclient.ContainerRemoveOptions{Force: true})
				return err
			})
			_, err = docker.ContainerStart(ctx, res.ID, dockerclient.ContainerStartOptions{})
			Expect(err).NotTo(HaveOccurred())
			before, err := docker.ContainerInspect(ctx, res.ID, dockerclient.ContainerInspectOptions{})
			Expect(err).NotTo(HaveOccurred())

			Expect(cluster.Client.Create(ctx, vm)).To(Succeed())
			Eventually(func(g Gomega) {
				cur := getVM(g, ctx, vm)
				g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineFailed))
				g.Expect(cur.Status.Reason).To(ContainSubstring(name))
				g.Expect(cur.Status.Conditions).To(ContainElement(HaveField("Reason", vmop.ReasonNotOwned)))
			}).WithTimeout(operatortest.Reconcile).Should(Succeed())
			Eventually(eventReasons).WithArguments(ctx, *ns, vm.Name).Should(ContainElement(vmop.ReasonNotOwned))

			By("deleting the VirtualMachine: the container still runs as it was")
			cur := getVM(Default, ctx, vm)
			Expect(cluster.Client.Delete(ctx, cur)).To(Succeed())
			Eventually(func() error {
				return cluster.Client.Get(ctx, client.ObjectKeyFromObject(vm), &cloudv1.VirtualMachine{})
			}).WithTimeout(operatortest.Reconcile).Should(Satisfy(apierrors.IsNotFound))
			after, err := docker.ContainerInspect(ctx, res.ID, dockerclient.ContainerInspectOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(after.Container.State.Running).To(BeTrue())
			Expect(after.Container.State.StartedAt).To(Equal(before.Container.State.StartedAt))
			Expect(after.Container.RestartCount).To(Equal(before.Container.RestartCount))
			Expect(after.Container.Config.Labels).To(Equal(before.Container.Config.Labels))
			Expect(after.Container.Config.Labels).NotTo(HaveKey(driver.LabelManagedBy))
			Expect(after.Container.HostConfig.NanoCPUs).To(Equal(before.Container.HostConfig.NanoCPUs))
			Expect(after.Container.HostConfig.Memory).To(Equal(before.Container.HostConfig.Memory))
			Expect(dockerContainers(ctx, docker, driver.LabelUID+"="+string(cur.UID))).To(BeEmpty())
		})
	})
})

// dockerContainers lists the containers, stopped ones too, that carry
// every label given as key=value.
func dockerContainers(ctx context.Context, docker *dockerclient.Client, labels ...string) ([]container.Summary, error) {
	res, err := docker.ContainerList(ctx, dockerclient.ContainerListOptions{All: true, Filters: make(dockerclient.Filters).Add("label", labels...)})
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}

// removeDockerServers deletes the VirtualMachines left in ns, waits until
// they are gone (their finalizer removes their containers), and then
// checks that no container made for ns is left, removing any there is.
func removeDockerServers(ctx context.Context, ns *string) {
	Expect(cluster.Client.DeleteAllOf(ctx, &cloudv1.VirtualMachine{}, client.InNamespace(*ns))).To(Succeed())
	Eventually(func(g Gomega) {
		list := &cloudv1.VirtualMachineList{}
		g.Expect(cluster.Client.List(ctx, list, client.InNamespace(*ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}).WithTimeout(operatortest.Reconcile).Should(Succeed())
	docker, err := vmfixture.NewDockerClient()
	Expect(err).NotTo(HaveOccurred())
	defer docker.Close()
	left, err := dockerContainers(ctx, docker, driver.LabelNamespace+"="+*ns)
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, c := range left {
		names = append(names, strings.Join(c.Names, ","))
		if _, err := docker.ContainerRemove(ctx, c.ID, dockerclient.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); !cerrdefs.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(names).To(BeEmpty(), "containers of namespace %s outlived its VirtualMachines (removed now)", *ns)
}

// eventReasons lists the reasons of the Events about name in ns.
func eventReasons(ctx context.Context, ns, name string) ([]string, error) {
	list := &corev1.EventList{}
	if err := cluster.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var reasons []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons, nil
}

// A control plane of its own: without the suite's VirtualMachine controller
// (and, for registration, without the CRD).
var _ = Describe("VirtualMachine controller start-up", labelSlow, labelVM, labelEnvtestOnly, func() {
	var cp *controlplane.ControlPlane
	BeforeEach(func(ctx SpecContext) {
		requires[operatortest.LocalControlPlanes]("control-plane binaries on this machine: the spec starts control planes of its own")
		plane, err := repo.ControlPlane(root, clusterVersion(), controlplane.Options{Out: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		cp, err = controlplane.Start(plane)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		admin, err := client.New(cp.Config, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vmcontroller.DefaultNamespace}})).To(Succeed())
		for _, dir := range []string{"config/vm/rbac", "config/vm/register-crd"} {
			objs, err := deploy.Render(root, dir)
			Expect(err).NotTo(HaveOccurred())
			for _, o := range objs {
				Expect(admin.Create(ctx, o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
			}
		}
		By("waiting until the API server's authorizer has the new bindings")
		asController, err := apiextensionsclient.NewForConfig(deploy.ImpersonateVMController(cp.Config))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := asController.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "virtualmachines.cloudnative.kubeharness.dev", metav1.GetOptions{})
			return err
		}).Should(Satisfy(apierrors.IsNotFound))
	})

	It("registers its CRD with --register-crd, waits until it is served, and upgrades an older one", func(ctx SpecContext) {
		opts, fake, err := operatortest.VMControllerOptions()
		Expect(err).NotTo(HaveOccurred())
		if fake == nil {
			fake = driver.NewFake()
			opts.NewDriver = func() (driver.Driver, error) { return fake, nil }
		}
		opts.RegisterCRD = true
		run := operatortest.StartVMController(cp, opts, GinkgoLogr)
		DeferCleanup(func() error { return run.Stop(operatortest.ManagerStopTimeout) })

		ext, err := apiextensionsclient.NewForConfig(cp.Config)
		Expect(err).NotTo(HaveOccurred())
		want, err := vmop.CRD()
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(crd.Annotations).To(HaveKeyWithValue(vmop.CRDRevisionAnnotation, want.Annotations[vmop.CRDRevisionAnnotation]))
			g.Expect(crd.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())

		By("serving VirtualMachines: one created now becomes Active")
		vms, err := vmclientset.NewForConfig(cp.Config)
		Expect(err).NotTo(HaveOccurred())
		// becomesActive creates a VirtualMachine and waits until the
		// controller has made it Active.
		becomesActive := func(name string) {
			GinkgoHelper()
			_, err := vms.CloudnativeV1alpha1().VirtualMachines(metav1.NamespaceDefault).Create(ctx, makeVM(name, metav1.NamespaceDefault, "1", "32Mi"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				cur, err := vms.CloudnativeV1alpha1().VirtualMachines(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
			}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		}
		becomesActive("first")

		By("upgrading a CRD registered with another revision")
		Expect(run.Stop(operatortest.ManagerStopTimeout)).To(Succeed())
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		crd.Annotations[vmop.CRDRevisionAnnotation] = "older"
		crd.Spec.Names.ShortNames = []string{"vm"}
		_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		run = operatortest.StartVMController(cp, opts, GinkgoLogr)
		Eventually(func(g Gomega) {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(crd.Annotations).To(HaveKeyWithValue(vmop.CRDRevisionAnnotation, want.Annotations[vmop.CRDRevisionAnnotation]))
			g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf("vm", "vms"))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())

		By("serving VirtualMachines again once the upgraded CRD is served")
		becomesActive("second")
	})

	// The sweep runs in a controller of its own, started with a short period
	// and a fake driver of its own, as the controller's ServiceAccount.
	It("removes, at start-up and then periodically, servers whose VirtualMachine is gone, and only those", func(ctx SpecContext) {
		Expect(operatortest.InstallCRDs(cp.Config, root)).To(Succeed())
		admin, err := client.New(cp.Config, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		ns := metav1.NamespaceDefault

		opts, _, err := operatortest.VMControllerOptions()
		Expect(err).NotTo(HaveOccurred())
		fake := driver.NewFake()
		opts.NewDriver = func() (driver.Driver, error) { return fake, nil }
		opts.Driver = driver.FakeDriverName
		// Short, so that the spec sees a sweep after the start-up one; it
		// waits for the Events, not for a time.
		opts.Controller.OrphanSweep = time.Second

		By("a server left while no controller ran goes at start-up")
		fake.AddForeign(ns, "left", "uid-left")
		foreign := fake.AddForeign(ns, "not-ours", "")
		run := operatortest.StartVMController(cp, opts, GinkgoLogr)
		DeferCleanup(func() error { return run.Stop(operatortest.ManagerStopTimeout) })
		Eventually(orphanEvents).WithArguments(ctx, admin, ns, "uid-left").WithTimeout(operatortest.Reconcile).
			Should(ContainElement(ContainSubstring(ns + "/left (uid uid-left)")))

		By("a VirtualMachine's server stays; one orphaned later goes at a later sweep")
		vms, err := vmclientset.NewForConfig(cp.Config)
		Expect(err).NotTo(HaveOccurred())
		kept, err := vms.CloudnativeV1alpha1().VirtualMachines(ns).Create(ctx, makeVM("kept", ns, "500m", "32Mi"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			cur, err := vms.CloudnativeV1alpha1().VirtualMachines(ns).Get(ctx, "kept", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive))
		}).WithTimeout(operatortest.Reconcile).Should(Succeed())
		fake.AddForeign(ns, "later", "uid-later")
		Eventually(orphanEvents).WithArguments(ctx, admin, ns, "uid-later").WithTimeout(operatortest.Reconcile).
			Should(ContainElement(ContainSubstring(ns + "/later (uid uid-later)")))

		var left []string
		for _, s := range fake.List() {
			left = append(left, s.Server.ID)
			Expect(s.Machine.UID).NotTo(BeElementOf("uid-left", "uid-later"))
		}
		Expect(left).To(ContainElement(foreign), "a server the driver did not make was removed")
		Expect(fake.List()).To(ContainElement(SatisfyAll(HaveField("Machine.UID", string(kept.UID)), HaveField("Server.Running", true))),
			"the server of a VirtualMachine that exists was removed")
	})

	It("with leader election on a Lease, lets only the leader act, and another take over when it stops", func(ctx SpecContext) {
		Expect(operatortest.InstallCRDs(cp.Config, root)).To(Succeed())
		type replica struct {
			fake    *driver.Fake
			run     *operatortest.InProcessRun
			leading chan bool
		}
		start := func(id string) *replica {
			opts, _, err := operatortest.VMControllerOptions()
			Expect(err).NotTo(HaveOccurred())
			r := &replica{fake: driver.NewFake(), leading: make(chan bool, 4)}
			opts.NewDriver = func() (driver.Driver, error) { return r.fake, nil }
			opts.LeaderElection, opts.Identity = true, id
			// The leader hands over by releasing the Lease, so a long lease
			// costs no time; a renew deadline of 2 s lost leadership to a
			// slow API server on a busy machine.
			opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 10*time.Second, 8*time.Second, 500*time.Millisecond
			opts.Leading = func(l bool) { r.leading <- l }
			r.run = operatortest.StartVMController(cp, opts, GinkgoLogr.WithName(id))
			DeferCleanup(r.run.Stop, operatortest.ManagerStopTimeout)
			return r
		}
		a := start("replica-a")
		Eventually(a.leading).WithTimeout(operatortest.Reconcile).Should(Receive(BeTrue()))
		b := start("replica-b")

		vms, err := vmclientset.NewForConfig(cp.Config)
		Expect(err).NotTo(HaveOccurred())
		create := func(name string) {
			_, err := vms.CloudnativeV1alpha1().VirtualMachines(metav1.NamespaceDefault).Create(ctx, makeVM(name, metav1.NamespaceDefault, "1", "32Mi"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		create("one")
		Eventually(func() int { return len(a.fake.List()) }).WithTimeout(operatortest.Reconcile).Should(Equal(1))
		Consistently(func() driver.Calls { return b.fake.Calls() }).WithTimeout(2 * time.Second).Should(BeZero())

		By("stopping the leader: it releases the Lease and the other replica takes over")
		Expect(a.run.Stop(operatortest.ManagerStopTimeout)).To(Succeed())
		Eventually(b.leading).WithTimeout(operatortest.Reconcile).Should(Receive(BeTrue()))
		create("two")
		Eventually(func() []string {
			var names []string
			for _, s := range b.fake.List() {
				names = append(names, s.Machine.Name)
			}
			return names
		}).WithTimeout(operatortest.Reconcile).Should(ContainElement("two"))
		Expect(a.fake.List()).To(HaveLen(1), "the stopped replica acted after it stopped")
	})
})
