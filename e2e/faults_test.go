package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/bundle"
	hcluster "github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/faults"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/faultenv"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// faultRun is one fault spec's workload: its name in the report, its
// size, and whether the fault lasts until the workload converged (a proxy
// fault) rather than ending when inject returns.
type faultRun struct {
	name                        string
	playbooks, appServices, vms int
	lasting                     bool
	// afterAdvanced, when set, holds the fault back until that many
	// objects were moved on (Playbooks being deleted and finalized),
	// rather than injecting it as soon as all were created.
	afterAdvanced int
}

// fullWorkload is the size of the workload run through a fault that ends.
func fullWorkload(name string) faultRun {
	return faultRun{name: name, playbooks: 20, appServices: 5, vms: 5}
}

// faultFigures are what a fault cost, reported with each spec.
type faultFigures struct {
	Fault string
	// Admissions is how many probe admissions were sent during the fault,
	// and Failed how many of them failed.
	Admissions, Failed int
	// Recovered is how long after the fault ended admissions succeeded again.
	Recovered time.Duration
	// Converged is how long after the fault ended every object of the
	// workload arrived.
	Converged time.Duration
	// Lasting is true for a fault that lasted until the workload
	// converged: Converged then counts from the fault's start.
	Lasting bool
	// FailedWrites counts the workload's own requests that failed and were
	// retried.
	FailedWrites int
}

func (f faultFigures) String() string {
	if f.Lasting {
		return fmt.Sprintf("%s: admissions failed during the fault %d of %d; workload converged %s after the fault began, with the fault on; %d workload requests failed and were retried",
			f.Fault, f.Failed, f.Admissions, f.Converged.Round(time.Millisecond), f.FailedWrites)
	}
	return fmt.Sprintf("%s: admissions failed during the fault %d of %d; admitting again %s after it ended; workload converged %s after it ended; %d workload requests failed and were retried",
		f.Fault, f.Failed, f.Admissions, f.Recovered.Round(time.Millisecond), f.Converged.Round(time.Millisecond), f.FailedWrites)
}

// hold keeps a fault in place for d: the fault's length is what is under
// test, not a state to wait for.
func hold(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Each spec here breaks a FaultEnv (a control plane, the manager binary
// behind a fault proxy and the VirtualMachine controller binary), never the
// suite's cluster, and runs a workload through the fault. The specs on one
// Ginkgo process break that process's FaultEnv in turn (sharedFaultEnv), so
// they run in parallel with the rest of the suite.
var _ = Describe("under faults", labelSlow, labelFaults, labelEnvtestOnly, func() {
	var (
		env   *faultenv.FaultEnv
		ns    string
		probe *faultenv.AdmissionProbe
	)
	BeforeEach(func(ctx SpecContext) {
		requires[operatortest.LocalControlPlanes]("processes the harness runs on this machine, to inject faults into")
		var err error
		env = sharedFaultEnv(ctx)
		ns, err = operatortest.CreateNamespace(ctx, env.Client, "faults")
		Expect(err).NotTo(HaveOccurred())
		probe, err = faultenv.StartAdmissionProbe(env.ControlPlane.Config, ns)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(probe.Stop)
	}, NodeTimeout(2*time.Minute))

	// through runs the workload, calls inject once every object was
	// created (so reconciles are in flight), and then proves that the
	// workload converged with nothing lost or doubled, that the namespace
	// goes, and reports the figures.
	through := func(ctx context.Context, run faultRun, inject func(ctx context.Context)) faultFigures {
		GinkgoHelper()
		name := run.name
		wl, err := faultenv.NewWorkload(env.ControlPlane.Config, ns, run.playbooks, run.appServices, run.vms)
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		go wl.Run(runCtx)
		Eventually(wl.Created).Should(Equal(run.playbooks+run.appServices+run.vms), "the workload's objects are created")
		if run.afterAdvanced > 0 {
			Eventually(wl.Advanced).Should(BeNumerically(">=", run.afterAdvanced), "the workload's objects are moving on")
		}

		By("injecting: " + name)
		start := time.Now()
		inject(ctx)
		end := time.Now()

		By("waiting for the workload to converge")
		Eventually(wl.Done).WithContext(ctx).WithTimeout(faultenv.FaultSettleTimeout).Should(Succeed(),
			"every object of the workload arrives after the fault (%s)", name)
		if run.lasting {
			// The fault lasted until now: convergence is measured from its start.
			end = time.Now()
		}
		f := faultFigures{Fault: name, Converged: time.Since(end), FailedWrites: wl.FailedWrites(), Lasting: run.lasting}
		if run.lasting {
			f.Converged = end.Sub(start)
		}
		Expect(wl.Problems()).To(BeEmpty(), "nothing lost, nothing doubled")
		f.Admissions, f.Failed, _ = probe.Between(start, end)
		Eventually(func() error {
			first := time.Time{}
			for _, r := range probe.Since(end) {
				if r.Err == nil && (first.IsZero() || r.At.Before(first)) {
					first = r.At
				}
			}
			if first.IsZero() {
				return fmt.Errorf("no admission sent since the fault ended succeeded")
			}
			f.Recovered = first.Sub(end)
			return nil
		}).Should(Succeed())

		stop() // the workload writes nothing more
		By("deleting everything in the namespace: nothing holds it")
		Expect(faultenv.DrainNamespace(ctx, env.ControlPlane.Config, ns, operatortest.GarbageCollection)).To(Succeed())
		Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

		AddReportEntry(name, f.String())
		GinkgoWriter.Println(f.String())
		return f
	}

	It("converges after etcd is killed with SIGKILL mid-reconcile and restarted on its data", func(ctx SpecContext) {
		through(ctx, fullWorkload("etcd killed and restarted"), func(ctx context.Context) {
			Expect(env.Kill(controlplane.Etcd)).To(Succeed())
			hold(ctx, 3*time.Second)
			Expect(env.Restart(ctx, controlplane.Etcd)).To(Succeed())
		})
	})

	It("converges after the API server is frozen with SIGSTOP for 5 s", func(ctx SpecContext) {
		f := through(ctx, fullWorkload("API server stopped 5 s"), func(ctx context.Context) {
			resume, err := env.Pause(controlplane.APIServer)
			Expect(err).NotTo(HaveOccurred())
			hold(ctx, 5*time.Second)
			Expect(resume()).To(Succeed())
		})
		Expect(f.Failed).To(BeNumerically(">", 0), "a frozen API server admits nothing: the probe must have seen it")
	})

	It("converges after the API server restarts", func(ctx SpecContext) {
		through(ctx, fullWorkload("API server restarted"), func(ctx context.Context) {
			Expect(env.Restart(ctx, controlplane.APIServer)).To(Succeed())
		})
	})

	It("converges with 500 ms latency and 5 % 5xx between the manager and the API server", func(ctx SpecContext) {
		before := env.Proxy.Stats()
		end, err := env.Proxy.Set(faults.Faults{Latency: 500 * time.Millisecond, ErrorRate: 0.05, ErrorCode: 500})
		Expect(err).NotTo(HaveOccurred())
		defer end()
		// The fault lasts while the workload converges, measured with the
		// fault on. Every one of the manager's requests waits 500 ms, so
		// the workload is half the size.
		through(ctx, faultRun{name: "500 ms latency and 5% 500s to the manager", playbooks: 10, appServices: 3, vms: 3, lasting: true},
			func(context.Context) {})
		s := env.Proxy.Stats().Sub(before)
		GinkgoWriter.Printf("fault proxy: %d requests, %d delayed, %d answered 500\n", s.Requests, s.Delayed, s.Errors)
		Expect(s.Errors).To(BeNumerically(">", 0), "the proxy did fail some of the manager's requests")
	})

	It("converges after every request of the manager's fails with 503 for 3 s while Playbooks are being finalized", func(ctx SpecContext) {
		run := fullWorkload("503 to every request of the manager's for 3 s, mid-deletion")
		run.afterAdvanced = 5
		before := env.Proxy.Stats()
		through(ctx, run, func(ctx context.Context) {
			end, err := env.Proxy.Set(faults.Faults{ErrorRate: 1, ErrorCode: 503})
			Expect(err).NotTo(HaveOccurred())
			hold(ctx, 3*time.Second)
			end()
		})
		Expect(env.Proxy.Stats().Sub(before).Errors).To(BeNumerically(">", 0), "the proxy answered the manager's requests 503")
	})

	It("converges with connection resets and 429s between the manager and the API server", func(ctx SpecContext) {
		before := env.Proxy.Stats()
		end, err := env.Proxy.Set(faults.Faults{ResetRate: 0.05, ErrorRate: 0.05, ErrorCode: 429})
		Expect(err).NotTo(HaveOccurred())
		defer end()
		through(ctx, faultRun{name: "5% resets and 5% 429s to the manager", playbooks: 20, appServices: 5, vms: 5, lasting: true},
			func(context.Context) {})
		s := env.Proxy.Stats().Sub(before)
		GinkgoWriter.Printf("fault proxy: %d requests, %d reset, %d answered 429\n", s.Requests, s.Resets, s.Errors)
		Expect(s.Resets).To(BeNumerically(">", 0), "the proxy did reset some of the manager's requests")
	})

	It("denies Playbook writes naming the webhook while the manager is down, lets node status through, and is ready only once it serves", func(ctx SpecContext) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns, Labels: map[string]string{overcommitLabel: "true"},
			Annotations: map[string]string{overcommitCPURatio: "2"}}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		kubeletCfg := rest.CopyConfig(env.ControlPlane.Config)
		kubeletCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + node.Name, Groups: []string{"system:nodes", "system:authenticated"}}
		kubelet, err := client.New(kubeletCfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		heartbeat := func(ctx context.Context) (*corev1.Node, error) {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
				return nil, err
			}
			patch := client.MergeFrom(n.DeepCopy())
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
			return n, kubelet.Status().Patch(ctx, n, patch)
		}

		f := through(ctx, fullWorkload("manager down, then up"), func(ctx context.Context) {
			end, err := env.StopManager()
			Expect(err).NotTo(HaveOccurred())
			defer end()

			By("a Playbook write is denied, naming the webhook that could not be called")
			err = env.Client.Create(ctx, &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{Name: "while-down", Namespace: ns},
				Spec: opsv1.PlaybookSpec{Abstract: "written while the manager is down"}})
			Expect(err).To(HaveOccurred(), "failurePolicy Fail")
			Expect(err.Error()).To(SatisfyAll(ContainSubstring("mplaybook.kubeharness.dev"), ContainSubstring("failed calling webhook")))

			By("node status goes through unchanged (failurePolicy Ignore)")
			got, err := heartbeat(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Status.Allocatable.Cpu().String()).To(Equal("4"), "no webhook ran, so no overcommit")

			By("readiness fails while nothing serves")
			Expect(env.Ready(ctx)).NotTo(Succeed())

			By("starting the manager again: whenever /readyz says ready, it admits")
			Expect(env.StartManager()).To(Succeed())
			Eventually(func(ctx context.Context) error {
				if err := env.Ready(ctx); err != nil {
					return err
				}
				// Ready now: the very next admission must go through.
				pb := &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{GenerateName: "ready-", Namespace: ns}, Spec: opsv1.PlaybookSpec{Abstract: " x "}}
				Expect(env.Client.Create(ctx, pb, client.DryRunAll)).To(Succeed(), "/readyz answered 200 while the webhooks could not admit")
				Expect(pb.Spec.Abstract).To(Equal("x"))
				return nil
			}).WithContext(ctx).WithTimeout(deploy.WebhookReadyTimeout).Should(Succeed())
		})
		Expect(f.Failed).To(BeNumerically(">", 0), "admissions fail while the manager is down")

		By("node status is overcommitted again with the manager back")
		Eventually(func(g Gomega, ctx context.Context) {
			got, err := heartbeat(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Allocatable.Cpu().String()).To(Equal("8"))
		}).WithContext(ctx).Should(Succeed())
	})
})

// faultEnv is this Ginkgo process's FaultEnv, which the fault and load
// specs that land on the process use in turn: starting one costs 2–4 s on
// 2 cores, more than most of those specs' own work. Each spec gets it as
// the spec before left it, checked (FaultEnv.Healthy); a spec that failed
// takes it down after writing its bundle, so the next spec starts a new
// one and no failure leaks into another spec.
var faultEnv struct {
	env *faultenv.FaultEnv
	// dir holds its logs; specs counts the specs it served.
	dir   string
	specs int
}

// sharedFaultEnv returns this process's FaultEnv, healthy, starting one
// when there is none, and writes the spec's faults (and on failure its
// bundle) when the spec ends.
func sharedFaultEnv(ctx context.Context) *faultenv.FaultEnv {
	GinkgoHelper()
	if env := faultEnv.env; env != nil {
		hctx, cancel := context.WithTimeout(ctx, deploy.WebhookReadyTimeout)
		err := env.Healthy(hctx)
		cancel()
		if err != nil {
			GinkgoWriter.Printf("the fault environment is not healthy after %d specs; starting a new one: %v\n", faultEnv.specs, err)
			Expect(stopFaultEnv()).To(Succeed())
		}
	}
	if faultEnv.env == nil {
		dir, err := os.MkdirTemp("", "kubeharness-faultenv-")
		Expect(err).NotTo(HaveOccurred())
		env, err := faultenv.StartFaultEnv(ctx, faultenv.FaultEnvOptions{
			Root: root, Version: clusterVersion(), Dir: dir, VMs: true,
		})
		if err != nil {
			_ = os.RemoveAll(dir)
		}
		Expect(err).NotTo(HaveOccurred())
		faultEnv.env, faultEnv.dir, faultEnv.specs = env, dir, 0
	}
	env := faultEnv.env
	faultEnv.specs++
	GinkgoWriter.Printf("fault environment: spec %d on it; its logs are in %s\n", faultEnv.specs, faultEnv.dir)
	start := time.Now()
	DeferCleanup(func() {
		GinkgoWriter.Printf("faults this spec injected:\n%s", env.Timeline.Since(start))
		report := CurrentSpecReport()
		if !report.Failed() {
			return
		}
		dir := bundle.Dir(artifacts, report.FullText())
		if err := env.WriteBundle(dir); err != nil {
			GinkgoWriter.Printf("environment bundle incomplete: %v\n", err)
		}
		GinkgoWriter.Printf("environment bundle (the environment's whole life, %d specs): %s\n", faultEnv.specs, dir)
		Expect(stopFaultEnv()).To(Succeed())
	})
	return env
}

// stopFaultEnv stops this process's FaultEnv, if it runs, and removes its logs.
func stopFaultEnv() error {
	if faultEnv.env == nil {
		return nil
	}
	err := faultEnv.env.Stop()
	_ = os.RemoveAll(faultEnv.dir)
	faultEnv.env = nil
	return err
}

// loadPlaybooksEnv sets how many Playbooks the bulk spec below creates at
// once: 300 in the suite, which proves the same as more; make bench creates
// 1,000 for the figure.
const loadPlaybooksEnv = "LOAD_PLAYBOOKS"

// loadDecorators: where control planes run on this machine (envtest) the
// load specs load their process's FaultEnv and run in parallel with the
// rest of the suite; elsewhere (kind, existing clusters) they load the one
// manager every spec uses, so they run alone.
func loadDecorators() []any {
	if operatortest.ProviderOffers[operatortest.LocalControlPlanes]() {
		return []any{labelFaults, labelLoad, labelSlow}
	}
	return []any{labelFaults, labelLoad, labelSlow, Serial}
}

var _ = Describe("under load", loadDecorators(), func() {
	var (
		ns string
		// loadClient is an admin client without client-go's default throttle
		// (5 requests per second from a kubeconfig): the load is the point.
		loadClient client.Client
		// spent marks a load too big to drain (see BeforeEach).
		spent bool
	)
	BeforeEach(func(ctx SpecContext) {
		// Where control planes run on this machine the load goes to this
		// process's FaultEnv, beside the rest of the suite; elsewhere to
		// the cluster every spec uses.
		_, local := hcluster.Ability[operatortest.LocalControlPlanes](cluster.Cluster)
		cfg := cluster.Config
		if local {
			cfg = sharedFaultEnv(ctx).ControlPlane.Config
		}
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 500, 1000
		var err error
		loadClient, err = client.New(cfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		if local {
			ns, err = operatortest.CreateNamespace(ctx, loadClient, "load")
			Expect(err).NotTo(HaveOccurred())
		} else {
			ns = enterNamespace(ctx, "load")
		}
		// The manager serves the specs after this one: the load leaves with
		// the spec. Its Playbooks are finalized now, not while the next spec
		// waits behind them in the manager's queue. On envtest a load too
		// big to drain quickly (spent) takes the FaultEnv down instead: a
		// new one starts sooner.
		spent = false
		DeferCleanup(func(ctx context.Context) {
			if local && spent {
				if !CurrentSpecReport().Failed() { // else sharedFaultEnv bundles it, then stops it
					Expect(stopFaultEnv()).To(Succeed())
				}
				return
			}
			Expect(loadClient.DeleteAllOf(ctx, &opsv1.Playbook{}, client.InNamespace(ns))).To(Succeed())
			Eventually(func(g Gomega) {
				left := &opsv1.PlaybookList{}
				g.Expect(loadClient.List(ctx, left, client.InNamespace(ns))).To(Succeed())
				g.Expect(left.Items).To(BeEmpty(), "Playbooks of the load not finalized yet")
			}).WithContext(ctx).WithTimeout(operatortest.BulkReconcile).WithPolling(250 * time.Millisecond).Should(Succeed())
			if local {
				Expect(loadClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			}
		})
	}, NodeTimeout(2*time.Minute))

	It("converges a conflict storm: many writers updating the same Playbooks while they reconcile", func(ctx SpecContext) {
		// 8 writers' first updates from one read make at least 35 conflicts
		// for certain, and hundreds more by chance.
		const playbooks, writers, updates = 5, 8, 5
		for i := range playbooks {
			Expect(loadClient.Create(ctx, &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("storm-%d", i), Namespace: ns},
				Spec: opsv1.PlaybookSpec{Abstract: "v0"}})).To(Succeed())
		}
		storm := faultenv.ConflictStorm{Client: loadClient, Namespace: ns, Playbooks: playbooks, Writers: writers, Updates: updates}
		res, err := storm.Run(ctx)
		Expect(err).NotTo(HaveOccurred())
		msg := fmt.Sprintf("conflict storm: %d writers × %d updates × %d Playbooks in %s, %d conflicts retried",
			writers, updates, playbooks, res.Took.Round(time.Millisecond), res.Conflicts)
		AddReportEntry("conflict storm", msg)
		GinkgoWriter.Println(msg)
		Expect(res.Conflicts).To(BeNumerically(">=", storm.MinConflicts()), "every writer's first updates were sent from one read, so all but one of each collided")

		By("every writer's last update landed, and the controller converged on the final abstract")
		Eventually(storm.Converged).WithContext(ctx).Should(Succeed())
	})

	It("reconciles a bulk of Playbooks created at once (300; LOAD_PLAYBOOKS)", func(ctx SpecContext) {
		n := 300
		if v := os.Getenv(loadPlaybooksEnv); v != "" {
			var err error
			n, err = strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred(), "%s=%q: a number of Playbooks", loadPlaybooksEnv, v)
		}
		const parallel = 50
		spent = true
		start := time.Now()
		Expect(faultenv.CreatePlaybooks(ctx, loadClient, ns, "bulk", n, parallel)).To(Succeed())
		created := time.Since(start)
		Eventually(func(g Gomega, ctx context.Context) {
			ready, err := faultenv.ReadyPlaybooks(ctx, loadClient, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ready).To(Equal(n))
		}).WithContext(ctx).WithTimeout(operatortest.BulkReconcile).Should(Succeed())
		msg := fmt.Sprintf("%d concurrent creates: created in %s, all Ready with their notes in %s",
			n, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		AddReportEntry("bulk creates", msg)
		GinkgoWriter.Println(msg)
	})
})

// LeaderKillsEnv sets how many leaders the spec below kills (default 1:
// each failover waits out the Lease, about 10 s); `kubeharness bench
// --leader-kills` runs the same 20 times (CI: 3) for the figures.
const leaderKillsEnv = "LEADER_KILLS"

// On a control plane of its own: in parallel with the rest of the suite.
var _ = Describe("leader election under fire", labelSlow, labelFaults, labelLeaderElection, labelEnvtestOnly, func() {
	It("never has two leaders while leader after leader is killed with SIGKILL, work goes on, and each failover takes under 15 s", func(ctx SpecContext) {
		requires[operatortest.LocalControlPlanes]("control-plane binaries on this machine: the spec runs manager processes against a control plane of its own")
		kills := 1
		if v := os.Getenv(leaderKillsEnv); v != "" {
			n, err := strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred(), "%s=%q: a number of kills", leaderKillsEnv, v)
			kills = n
		}
		dir := filepath.Join(artifacts, "leader-election")
		rep, err := faultenv.RunLeaderFire(ctx, faultenv.LeaderFireOptions{
			Root: root, Version: clusterVersion(), Dir: dir,
			Replicas: 3, Kills: kills, Progress: GinkgoWriter,
		})
		Expect(err).NotTo(HaveOccurred(), "replica logs in %s", dir)
		AddReportEntry("leader election under fire", rep.String())
		GinkgoWriter.Println(rep.String())
		for _, iv := range rep.Intervals {
			GinkgoWriter.Printf("  %s led %s – %s (%s)\n", iv.Process, iv.Start.UTC().Format("15:04:05.000"), iv.End.UTC().Format("15:04:05.000"), iv.EndedBy)
		}
		Expect(rep.Overlaps).To(BeEmpty(), "no two replicas led at once; replica logs in %s", dir)
		Expect(rep.Intervals).To(HaveLen(kills+1), "one leadership per kill and the last one")
		Expect(rep.Reconciled).To(Equal(kills+1), "every leader reconciled")
		Expect(rep.Failovers).To(HaveLen(kills))
		Expect(rep.Percentile(100)).To(BeNumerically("<", 15*time.Second), "the slowest failover")
	})
})

// faultyWorkloadTimeout bounds the workload below: four Playbooks through
// a proxy that fails every fourth request.
const faultyWorkloadTimeout = time.Minute

// A fault proxy in front of the suite's API server, with a client of the
// spec's own behind it: the fast proof of fault injection. The specs above
// put the manager itself behind the proxy, on a control plane each.
var _ = Describe("a fault proxy in front of the suite's API server", labelFaults, func() {
	ns := specNamespace("faulty")

	It("fails exactly every fourth request of a workload, which converges through it with nothing lost or doubled", func(ctx SpecContext) {
		timeline := &faults.Timeline{}
		proxy, err := faults.NewProxy(cluster.Config, tls.Certificate{}, timeline)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		DeferCleanup(func() { GinkgoWriter.Printf("faults injected:\n%s", timeline) })
		end, err := proxy.Set(faults.Faults{Latency: 20 * time.Millisecond, ErrorRate: 0.25, ErrorCode: http.StatusServiceUnavailable})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(end)

		wl, err := faultenv.NewWorkload(proxy.ClientConfig(cluster.Config), *ns, 4, 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(wl.VerifyWith(cluster.Config)).To(Succeed())
		ran := make(chan struct{})
		runCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() {
			defer close(ran)
			wl.Run(runCtx)
		}()
		Eventually(ran).WithTimeout(faultyWorkloadTimeout).Should(BeClosed(), "the workload converges through the proxy")
		Expect(wl.Problems()).To(BeEmpty(), "nothing lost or doubled")

		st := proxy.Stats()
		GinkgoWriter.Printf("proxy: %d requests, %d delayed, %d answered 503\n", st.Requests, st.Delayed, st.Errors)
		Expect(st.Requests).To(BeNumerically(">=", 4), "the workload went through the proxy")
		Expect(st.Delayed).To(Equal(st.Requests), "every request was delayed")
		Expect(st.Errors).To(Equal(st.Requests/4), "of k requests, floor(k/4) fail: the share is kept, not drawn")
		end()
		Expect(wl.Done(ctx)).To(Succeed())
	})
})
