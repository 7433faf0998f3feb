package e2e

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubeharness/kubeharness/internal/manager"
)

// handoverLease is the Lease duration of the replicas below: far longer
// than handoverTimeout, so that a standby can take the Lease within that
// timeout only because the leader released it, never because it expired.
// renewal is how often they renew it (RetryPeriod).
const (
	handoverLease   = 2 * time.Minute
	handoverTimeout = 30 * time.Second
	renewal         = 100 * time.Millisecond
)

// replica is one manager started in this process.
type replica struct {
	name    string
	mgr     ctrlmanager.Manager
	cancel  context.CancelFunc
	stopped chan error
	once    sync.Once
}

// stop stops the replica and waits until its manager returned.
func (r *replica) stop() {
	GinkgoHelper()
	r.once.Do(func() {
		r.cancel()
		Eventually(r.stopped).WithTimeout(handoverTimeout).Should(Receive(Not(HaveOccurred())), "replica %s stops cleanly", r.name)
	})
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// Two manager replicas in this process, on the suite's API server, with
// their caches and their Lease in the spec's namespace, so that they never
// act on another spec's objects: the fast proof of leader election. The
// slow ones kill leaders (faults_test.go; cluster_test.go on kind) and so
// wait out a Lease each time.
var _ = Describe("leader election", labelLeaderElection, func() {
	ns := specNamespace("leader")

	It("elects one of two replicas and, when the leader stops, hands the Lease to the other at once", func(ctx SpecContext) {
		start := func(name string) *replica {
			o := manager.DefaultOptions()
			o.MetricsAddr, o.ProbeAddr, o.DisableWebhooks, o.SkipNameValidation = "0", "0", true, true
			o.LeaderElection, o.LeaderElectionNS, o.WatchNamespaces = true, *ns, []string{*ns}
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = handoverLease, handoverLease/2, renewal
			// As the admin: the manager's own RBAC grants Leases in its
			// namespace only, and what is under test is the election.
			mgr, err := manager.New(cluster.Config, o)
			Expect(err).NotTo(HaveOccurred())
			mctx, cancel := context.WithCancel(context.Background())
			r := &replica{name: name, mgr: mgr, cancel: cancel, stopped: make(chan error, 1)}
			go func() { r.stopped <- mgr.Start(mctx) }()
			DeferCleanup(r.stop)
			return r
		}
		a, b := start("a"), start("b")

		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: *ns, Name: manager.LeaderElectionID}
		var leader, standby *replica
		Eventually(func(g Gomega) {
			g.Expect(a.elected()).NotTo(Equal(b.elected()), "exactly one replica leads")
			g.Expect(cluster.Client.Get(ctx, key, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		}).Should(Succeed())
		leader, standby = a, b
		if b.elected() {
			leader, standby = b, a
		}
		held, transitions := *lease.Spec.HolderIdentity, ptr.Deref(lease.Spec.LeaseTransitions, 0)
		// Never two leaders: over five of the leader's renewals the standby
		// keeps trying and keeps failing.
		Consistently(standby.elected).WithTimeout(5*renewal).Should(BeFalse(), "the standby waits while the leader renews")

		By("stopping leader " + leader.name + ": it releases the Lease, and standby " + standby.name + " takes it without waiting for it to expire")
		leader.stop()
		Eventually(func(g Gomega) {
			g.Expect(standby.elected()).To(BeTrue(), "the standby leads")
			g.Expect(cluster.Client.Get(ctx, key, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			g.Expect(*lease.Spec.HolderIdentity).NotTo(BeElementOf("", held), "the Lease has a new holder")
		}).WithTimeout(handoverTimeout).Should(Succeed(),
			"no handover within %s although the Lease lasts %s: the stopped leader did not release it", handoverTimeout, handoverLease)
		Expect(lease.Spec.LeaseTransitions).To(HaveValue(BeNumerically(">", transitions)))
	})
})
