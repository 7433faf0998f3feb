package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/scheme"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// envtestState is the part of .kubeharness/envtest/state.json these specs read.
type envtestState struct {
	SupervisorPID   int              `json:"supervisorPID"`
	EtcdDataDir     string           `json:"etcdDataDir"`
	ControlPlaneDir string           `json:"controlPlaneDir"`
	Processes       []envtestProcess `json:"processes"`
}

type envtestProcess struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// The second spec is the fast tier's proof of the dev environment: up
// (its own control plane, manager and VirtualMachine controller, about 3 s)
// and down; the first, slow one runs the whole dev loop.
var _ = Describe("make envtest-up / envtest-down", labelEnvtestUp, labelEnvtestOnly, func() {
	var kubeharness, manager, vmController, stateDir string
	// env is the environment kubeharness runs in: the VirtualMachine
	// driver is forced to fake, so that no spec depends on a Docker daemon.
	var env []string

	BeforeEach(func() {
		requires[operatortest.LocalControlPlanes]("control-plane binaries on this machine: the envtest dev loop runs local processes")
		root, err := repo.Root()
		Expect(err).NotTo(HaveOccurred())
		kubeharness, manager = filepath.Join(root, "bin", "kubeharness"), filepath.Join(root, "bin", "manager")
		vmController = filepath.Join(root, "bin", "vm-controller")
		for _, b := range []string{kubeharness, manager, vmController} {
			_, err := os.Stat(b)
			Expect(err).NotTo(HaveOccurred(), "%s is missing: `make e2e` builds it", b)
		}
		stateDir = GinkgoT().TempDir()
		env = append(environWithout(operatortest.VMDriverEnv), operatortest.VMDriverEnv+"="+driver.FakeDriverName)
	})

	run := func(args ...string) string {
		var out bytes.Buffer
		cmd := exec.Command(kubeharness, append(args, "--state-dir", stateDir)...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		GinkgoWriter.Printf("$ kubeharness %v\n%s", args, out.String())
		Expect(err).NotTo(HaveOccurred(), "kubeharness %v failed:\n%s", args, out.String())
		return out.String()
	}
	readState := func() envtestState {
		GinkgoHelper()
		var st envtestState
		data, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &st)).To(Succeed())
		return st
	}
	// up runs env up and returns the state it leaves and what it printed.
	up := func() (envtestState, string) {
		out := run("env", "up", "--manager", manager, "--vm-controller", vmController)
		DeferCleanup(func() { run("env", "down") })
		st := readState()
		var names []string
		for _, p := range st.Processes {
			names = append(names, p.Name)
		}
		Expect(names).To(ConsistOf("etcd", "kube-apiserver", "kube-controller-manager", "manager", "vm-controller"))
		return st, out
	}
	pidOf := func(st envtestState, name string) int {
		for _, p := range st.Processes {
			if p.Name == name {
				return p.PID
			}
		}
		Fail(fmt.Sprintf("no %s in state %+v", name, st))
		return 0
	}
	expectAllGone := func(st envtestState) {
		for _, p := range append(st.Processes, envtestProcess{"supervisor", st.SupervisorPID}) {
			Eventually(process.Alive).WithArguments(p.PID).WithTimeout(operatortest.Reconcile).
				Should(BeFalse(), "%s (pid %d) still runs after env down", p.Name, p.PID)
		}
		Expect(st.EtcdDataDir).NotTo(BeEmpty())
		Expect(st.EtcdDataDir).NotTo(BeADirectory(), "etcd's data directory is left behind")
		Expect(st.ControlPlaneDir).NotTo(BeEmpty())
		Expect(st.ControlPlaneDir).NotTo(BeADirectory(), "the control plane's certificates and kubeconfig are left behind")
		Expect(filepath.Join(stateDir, "state.json")).NotTo(BeAnExistingFile())
	}

	It("serves the Playbook contract through the manager binary, runs VirtualMachines through the vm-controller binary, provides kubectl, authenticates each component as itself, restarts a crashed manager and env down leaves nothing", labelSlow, func(ctx SpecContext) {
		st, out := up()
		Expect(out).To(ContainSubstring("VirtualMachine driver fake: VM_DRIVER=fake"))
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, "kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())

		pb := MakePlaybook("dev-loop", "default").Abstract("  trimmed by the webhook  ").Obj()
		Expect(c.Create(ctx, pb)).To(Succeed())
		Expect(pb.Spec.Abstract).To(Equal("trimmed by the webhook"))
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pb.NotesConfigMapName()}, &corev1.ConfigMap{})
		}).Should(Succeed(), "the manager's controller made no notes ConfigMap")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(pb), &opsv1.Playbook{})).To(Succeed())

		By("running a VirtualMachine with the fake driver")
		vm := &cloudv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "dev-loop", Namespace: "default"},
			Spec: cloudv1.VirtualMachineSpec{Resource: cloudv1.VirtualMachineResource{
				CPU: resource.MustParse("500m"), Memory: resource.MustParse("64Mi"),
			}},
		}
		Expect(c.Create(ctx, vm)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &cloudv1.VirtualMachine{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vm), cur)).To(Succeed())
			g.Expect(cur.Status.Phase).To(Equal(cloudv1.VirtualMachineActive), "reason: %s", cur.Status.Reason)
			g.Expect(cur.Status.Server.ID).NotTo(BeEmpty())
		}).WithTimeout(operatortest.Reconcile).Should(Succeed(), "see %s", filepath.Join(stateDir, "vm-controller.log"))
		status := run("env", "status")
		Expect(status).To(MatchRegexp(`(?m)^vm-controller\s+pid %d\s+running, restarts 0$`, pidOf(st, "vm-controller")))
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
			Expect(status).To(MatchRegexp(`(?m)^%s\s+pid %d\s+running$`, name, pidOf(st, name)), "env status reports every process it runs as running")
		}

		By("running kubectl as the printed usage says")
		kubectl := filepath.Join(stateDir, "bin", "kubectl")
		Expect(out).To(ContainSubstring("export KUBECONFIG=%s PATH=%s:$PATH", filepath.Join(stateDir, "kubeconfig"), filepath.Join(stateDir, "bin")))
		Expect(runKubectl(kubectl, "--kubeconfig", filepath.Join(stateDir, "kubeconfig"), "get", "pb", "-A")).To(ContainSubstring("dev-loop"))

		By("authenticating the manager and the VirtualMachine controller as themselves: their kubeconfigs cannot impersonate system:masters")
		for file, user := range map[string]string{
			"manager.kubeconfig":       deploy.ManagerUser(),
			"vm-controller.kubeconfig": deploy.ImpersonateVMController(&rest.Config{}).Impersonate.UserName,
		} {
			path := filepath.Join(stateDir, file)
			Expect(runKubectl(kubectl, "--kubeconfig", path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")).To(Equal(user))
			denied, err := kubectlOutput(kubectl, "--kubeconfig", path, "--as=kubeharness-admin", "--as-group=system:masters", "get", "secrets", "-n", "kube-system")
			Expect(err).To(HaveOccurred(), "%s let kubectl --as-group=system:masters read kube-system's Secrets:\n%s", file, denied)
			Expect(denied).To(ContainSubstring("cannot impersonate"))

			cfg, err := clientcmd.BuildConfigFromFlags("", path)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Impersonate).To(BeZero(), "%s impersonates: its identity is only advisory", file)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
			cs, err := kubernetes.NewForConfig(cfg)
			Expect(err).NotTo(HaveOccurred())
			_, err = cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s with the group system:masters: want Forbidden, got %v", file, err)
		}

		By("crashing the manager: the supervisor restarts it")
		crashed := pidOf(st, "manager")
		Expect(syscall.Kill(crashed, syscall.SIGKILL)).To(Succeed())
		Eventually(func() string { return run("env", "status") }).WithTimeout(deploy.WebhookReadyTimeout).
			Should(MatchRegexp(`(?m)^manager\s+pid \d+\s+running, restarts 1$`), "see %s", filepath.Join(stateDir, "env.log"))
		Expect(process.Alive(crashed)).To(BeFalse())
		Expect(pidOf(readState(), "manager")).NotTo(Equal(crashed))
		Expect(os.ReadFile(filepath.Join(stateDir, "env.log"))).To(ContainSubstring("the manager exited after"))
		Eventually(func(g Gomega) {
			pb := MakePlaybook("after-crash", "default").Abstract("  trimmed again  ").Obj()
			g.Expect(c.Create(ctx, pb, client.DryRunAll)).To(Succeed())
			g.Expect(pb.Spec.Abstract).To(Equal("trimmed again"))
		}).WithTimeout(deploy.WebhookReadyTimeout).Should(Succeed(), "the restarted manager's webhooks do not admit; see %s", filepath.Join(stateDir, "manager.log"))

		By("restarting the manager as after a rebuild: env restart returns once its webhooks admit")
		before := pidOf(readState(), "manager")
		Expect(run("env", "restart", "manager")).To(ContainSubstring("manager restarted"))
		after := pidOf(readState(), "manager")
		Expect(after).NotTo(Equal(before))
		Expect(process.Alive(before)).To(BeFalse())
		pb = MakePlaybook("after-restart", "default").Abstract("  trimmed at once  ").Obj()
		Expect(c.Create(ctx, pb, client.DryRunAll)).To(Succeed())
		Expect(pb.Spec.Abstract).To(Equal("trimmed at once"))
		Expect(run("env", "status")).To(MatchRegexp(`(?m)^manager\s+pid %d\s+running, restarts 1$`, after))

		st = readState()
		run("env", "down")
		expectAllGone(st)
	})

	It("runs the fake driver when no Docker daemon answers, and stops etcd and kube-apiserver even after the supervisor itself was killed", func() {
		socket := filepath.Join(GinkgoT().TempDir(), "no-docker.sock")
		env = append(environWithout(operatortest.VMDriverEnv, "DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"), "DOCKER_HOST=unix://"+socket)
		st, out := up()
		Expect(out).To(ContainSubstring("VirtualMachine driver fake: no Docker daemon answers at unix://%s; set VM_DRIVER=docker to insist", socket))
		Expect(syscall.Kill(st.SupervisorPID, syscall.SIGKILL)).To(Succeed())
		run("env", "down")
		expectAllGone(st)
	})
})

// runKubectl runs kubectl with args and returns its standard output.
func runKubectl(kubectl string, args ...string) string {
	GinkgoHelper()
	out, err := kubectlOutput(kubectl, args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %v:\n%s", args, out)
	return out
}

// kubectlOutput runs kubectl with args and returns what it printed.
func kubectlOutput(kubectl string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(kubectl, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	GinkgoWriter.Printf("$ kubectl %v\n%s\n", args, out.String())
	return out.String(), err
}

// environWithout is this process's environment without the variables
// names.
func environWithout(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			env = append(env, kv)
		}
	}
	return env
}
