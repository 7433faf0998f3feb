package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// envtestState is the part of .kubeharness/envtest/state.json these specs read.
type envtestState struct {
	SupervisorPID int    `json:"supervisorPID"`
	EtcdDataDir   string `json:"etcdDataDir"`
	Processes     []struct {
		Name string `json:"name"`
		PID  int    `json:"pid"`
	} `json:"processes"`
}

var _ = Describe("make envtest-up / envtest-down", Label("envtest-up", "envtest-only"), func() {
	var kubeharness, manager, stateDir string

	BeforeEach(func() {
		if cluster.Provider != "envtest" {
			Skip("the envtest dev loop runs local processes; provider is " + cluster.Provider)
		}
		root, err := binaries.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		kubeharness, manager = filepath.Join(root, "bin", "kubeharness"), filepath.Join(root, "bin", "manager")
		for _, b := range []string{kubeharness, manager} {
			_, err := os.Stat(b)
			Expect(err).NotTo(HaveOccurred(), "%s is missing: `make e2e` builds it (make build)", b)
		}
		stateDir = GinkgoT().TempDir()
	})

	run := func(args ...string) {
		var out bytes.Buffer
		cmd := exec.Command(kubeharness, append(args, "--state-dir", stateDir)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		GinkgoWriter.Printf("$ kubeharness %v\n%s", args, out.String())
		Expect(err).NotTo(HaveOccurred(), "kubeharness %v failed:\n%s", args, out.String())
	}
	up := func() envtestState {
		run("env", "up", "--manager", manager)
		DeferCleanup(func() { run("env", "down") })
		var st envtestState
		data, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &st)).To(Succeed())
		var names []string
		for _, p := range st.Processes {
			names = append(names, p.Name)
		}
		Expect(names).To(ConsistOf("etcd", "kube-apiserver", "kube-controller-manager", "manager"))
		return st
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
		for _, p := range append(st.Processes, struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		}{"supervisor", st.SupervisorPID}) {
			Eventually(running).WithArguments(p.PID).WithTimeout(framework.Reconcile).
				Should(BeFalse(), "%s (pid %d) still runs after env down", p.Name, p.PID)
		}
		Expect(st.EtcdDataDir).NotTo(BeEmpty())
		Expect(st.EtcdDataDir).NotTo(BeADirectory(), "etcd's data directory is left behind")
		Expect(filepath.Join(stateDir, "state.json")).NotTo(BeAnExistingFile())
	}

	It("serves the Playbook contract through the manager binary, and env down leaves nothing after the manager crashed", func(ctx SpecContext) {
		st := up()
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, "kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		pb := MakePlaybook("dev-loop", "default").Abstract("  trimmed by the webhook  ").Obj()
		Expect(c.Create(ctx, pb)).To(Succeed())
		Expect(pb.Spec.Abstract).To(Equal("trimmed by the webhook"))
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pb.NotesConfigMapName()}, &corev1.ConfigMap{})
		}).Should(Succeed(), "the manager's controller made no notes ConfigMap")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(pb), &opsv1.Playbook{})).To(Succeed())

		By("crashing the manager")
		Expect(syscall.Kill(pidOf(st, "manager"), syscall.SIGKILL)).To(Succeed())
		Eventually(running).WithArguments(pidOf(st, "manager")).WithTimeout(framework.Reconcile).Should(BeFalse())

		run("env", "down")
		expectAllGone(st)
	})

	It("stops etcd and kube-apiserver even after the supervisor itself was killed", func() {
		st := up()
		Expect(syscall.Kill(st.SupervisorPID, syscall.SIGKILL)).To(Succeed())
		run("env", "down")
		expectAllGone(st)
	})
})

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z'
}
