package faultenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// LeaderFireOptions configure RunLeaderFire.
type LeaderFireOptions struct {
	// Root is the repository root: config/ and bin/manager.
	Root string
	// Version is the Kubernetes version, as binaries.Locate
	// returns it.
	Version versions.Version
	// Dir receives every replica's log, one file per process.
	Dir string
	// Replicas is how many manager processes compete (2 or more).
	Replicas int
	// Kills is how many leaders are killed in turn.
	Kills int
	// Progress, when set, is told what happens as it happens.
	Progress io.Writer
}

// LeaderInterval is a time one manager process acted as leader, as the
// process itself recorded it (manager.LeaderLogMessage) until it recorded
// the end (manager.LeaderStopMessage) or died.
type LeaderInterval struct {
	Process    string
	Start, End time.Time
	// EndedBy says how it ended: "SIGKILL", "stopped" or "exited".
	EndedBy string
}

// LeaderFireReport is what RunLeaderFire saw.
type LeaderFireReport struct {
	Intervals []LeaderInterval
	// Failovers are, per kill, the time from the leader's death until
	// another replica started acting as leader.
	Failovers []time.Duration
	// Overlaps name every pair of intervals that overlap: empty when no two
	// replicas ever led at once.
	Overlaps []string
	// Reconciled counts the Playbooks created after each failover that the
	// new leader reconciled: work went on.
	Reconciled int
	// Lease is the election timing the replicas ran with: config/manager's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Percentile returns the p-th percentile of the failovers.
func (r *LeaderFireReport) Percentile(p int) time.Duration {
	if len(r.Failovers) == 0 {
		return 0
	}
	ds := append([]time.Duration(nil), r.Failovers...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(math.Ceil(float64(p)/100*float64(len(ds)))) - 1
	return ds[max(i, 0)]
}

func (r *LeaderFireReport) String() string {
	return fmt.Sprintf("leader election under fire: %d kills, failover p50 %s max %s (lease %s, renew %s, retry %s); %d leadership intervals checked, %d overlaps; %d Playbooks reconciled by successive leaders",
		len(r.Failovers), r.Percentile(50).Round(time.Millisecond), r.Percentile(100).Round(time.Millisecond),
		r.LeaseDuration, r.RenewDeadline, r.RetryPeriod, len(r.Intervals), len(r.Overlaps), r.Reconciled)
}

// CheckOverlaps returns a line for every two intervals that overlap. An
// interval still open (End zero) runs to the end of time.
func CheckOverlaps(intervals []LeaderInterval) []string {
	var out []string
	for i := range intervals {
		for j := i + 1; j < len(intervals); j++ {
			a, b := intervals[i], intervals[j]
			aEnd, bEnd := a.End, b.End
			if aEnd.IsZero() {
				aEnd = time.Unix(math.MaxInt32, 0)
			}
			if bEnd.IsZero() {
				bEnd = time.Unix(math.MaxInt32, 0)
			}
			if a.Start.Before(bEnd) && b.Start.Before(aEnd) {
				out = append(out, fmt.Sprintf("%s led %s–%s while %s led %s–%s", a.Process, stampOf(a.Start), stampOf(a.End),
					b.Process, stampOf(b.Start), stampOf(b.End)))
			}
		}
	}
	return out
}

func stampOf(t time.Time) string {
	if t.IsZero() {
		return "(still)"
	}
	return t.UTC().Format("15:04:05.000")
}

// LeaderTimings are the leader-election settings config/manager deploys
// the manager with.
func LeaderTimings(root string) (lease, renew, retry time.Duration, err error) {
	objs, err := deploy.RenderFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := deploy.FromUnstructured(u, &d); err != nil {
			return 0, 0, 0, err
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o := manager.DefaultOptions()
			o.BindFlags(fs)
			var args []string
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--leader-elect") {
					args = append(args, a)
				}
			}
			if err := fs.Parse(args); err != nil {
				return 0, 0, 0, fmt.Errorf("config/manager/manager.yaml: %w", err)
			}
			return o.LeaseDuration, o.RenewDeadline, o.RetryPeriod, nil
		}
	}
	return 0, 0, 0, errors.New("config/manager/manager.yaml: no Deployment with a manager container")
}

// replica is one manager process of the election.
type replica struct {
	name    string
	log     string
	run     operatortest.Running
	killed  time.Time
	stopped bool
}

// RunLeaderFire starts a control plane and o.Replicas manager processes
// electing a leader with config/manager's timings (webhooks off: every
// replica serves them alike, only the controllers are elected), then o.Kills
// times: waits for a leader, has it reconcile a new Playbook, kills it with
// SIGKILL and starts a new process in its place, as a Deployment would.
// It returns the leadership intervals the processes logged, checked for
// overlaps, and the failover times.
func RunLeaderFire(ctx context.Context, o LeaderFireOptions) (*LeaderFireReport, error) {
	if o.Replicas < 2 || o.Kills < 1 {
		return nil, fmt.Errorf("leader election under fire needs 2 or more replicas and 1 or more kills (got %d and %d)", o.Replicas, o.Kills)
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	binary := filepath.Join(o.Root, "bin", "manager")
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("%s is missing; run `make manager`", binary)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	rep := &LeaderFireReport{}
	var err error
	if rep.LeaseDuration, rep.RenewDeadline, rep.RetryPeriod, err = LeaderTimings(o.Root); err != nil {
		return nil, err
	}
	cpLog, err := os.Create(filepath.Join(o.Dir, "controlplane.log"))
	if err != nil {
		return nil, err
	}
	defer cpLog.Close()
	po, err := repo.ControlPlane(o.Root, o.Version, controlplane.Options{Out: cpLog})
	if err != nil {
		return nil, err
	}
	plane := operatortest.NewEnvtest(o.Root, po)
	cl, err := plane.Start(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = plane.Stop(context.Background()) }()
	cp, c := plane.Running(), cl.Client
	port, err := operatortest.InstallLocal(ctx, c, o.Root)
	if err != nil {
		return nil, err
	}
	if err := c.DeleteAllOf(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{}); err != nil {
		return nil, err
	}
	if err := c.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}); err != nil {
		return nil, err
	}
	opts := operatortest.ManagerOptions(port)
	opts.DisableWebhooks = true
	opts.LeaderElection, opts.LeaderElectionNS = true, certs.DefaultNamespace
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = rep.LeaseDuration, rep.RenewDeadline, rep.RetryPeriod

	var all []*replica
	defer func() {
		for _, r := range all {
			if r.run != nil {
				_ = r.run.Stop(operatortest.ManagerStopTimeout)
			}
		}
	}()
	start := func(slot int) (*replica, error) {
		r := &replica{name: fmt.Sprintf("replica-%d.%d", slot, len(all))}
		r.log = filepath.Join(o.Dir, r.name+".log")
		f, err := os.Create(r.log)
		if err != nil {
			return nil, err
		}
		r.run, err = operatortest.ManagerProcess{Binary: binary, Kubeconfig: filepath.Join(o.Dir, r.name+".kubeconfig"), Log: f}.Run(cp, opts)
		if err != nil {
			f.Close()
			return nil, err
		}
		// The log ends with how the process ended (a SIGKILL shows as such).
		go func() {
			fmt.Fprintf(f, "kubeharness: %s ended: %v\n", r.name, <-r.run.Done())
			_ = f.Close()
		}()
		all = append(all, r)
		return r, nil
	}
	slots := make([]*replica, o.Replicas)
	for i := range slots {
		if slots[i], err = start(i); err != nil {
			return nil, err
		}
	}

	// leader waits for a replica that logged its start as leader after
	// since and has not ended.
	leader := func(since time.Time) (int, time.Time, error) {
		deadline := time.Now().Add(rep.LeaseDuration + 10*rep.RetryPeriod + 30*time.Second)
		for time.Now().Before(deadline) {
			for i, r := range slots {
				ivs, err := leaderIntervals(r)
				if err != nil {
					return 0, time.Time{}, err
				}
				for _, iv := range ivs {
					if iv.End.IsZero() && !iv.Start.Before(since) {
						return i, iv.Start, nil
					}
				}
			}
			select {
			case <-ctx.Done():
				return 0, time.Time{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		return 0, time.Time{}, fmt.Errorf("no replica became leader within %s; logs in %s", rep.LeaseDuration+10*rep.RetryPeriod+30*time.Second, o.Dir)
	}

	since := time.Time{}
	lastLeader := 0
	for k := 0; k <= o.Kills; k++ {
		i, began, err := leader(since)
		if err != nil {
			return rep, err
		}
		lastLeader = i
		if k > 0 {
			rep.Failovers = append(rep.Failovers, began.Sub(since))
			fmt.Fprintf(progress, "kill %d: %s leads %s after the kill\n", k, slots[i].name, began.Sub(since).Round(time.Millisecond))
		} else {
			fmt.Fprintf(progress, "%s leads\n", slots[i].name)
		}
		name := fmt.Sprintf("led-by-%d", k)
		if err := reconciledBy(ctx, c, name); err != nil {
			return rep, fmt.Errorf("the leader %s did not reconcile Playbook %s: %w", slots[i].name, name, err)
		}
		rep.Reconciled++
		if k == o.Kills {
			break
		}
		victim := slots[i]
		if err := killManager(victim); err != nil {
			return rep, err
		}
		since = victim.killed
		if slots[i], err = start(i); err != nil {
			return rep, err
		}
	}
	// Followers first: the leader releases the Lease when it stops, and a
	// follower still running would take it, which is a handover, not the
	// end of the run.
	order := make([]*replica, 0, len(all))
	for _, r := range all {
		if r != slots[lastLeader] {
			order = append(order, r)
		}
	}
	for _, r := range append(order, slots[lastLeader]) {
		if r.killed.IsZero() && r.run != nil {
			_ = r.run.Stop(operatortest.ManagerStopTimeout)
			r.stopped = true
		}
	}
	for _, r := range all {
		ivs, err := leaderIntervals(r)
		if err != nil {
			return rep, err
		}
		rep.Intervals = append(rep.Intervals, ivs...)
	}
	sort.Slice(rep.Intervals, func(i, j int) bool { return rep.Intervals[i].Start.Before(rep.Intervals[j].Start) })
	rep.Overlaps = CheckOverlaps(rep.Intervals)
	return rep, nil
}

// killManager kills r's process with SIGKILL and waits until it is gone;
// r.killed is then a moment after which it cannot have acted.
func killManager(r *replica) error {
	b, ok := r.run.(*operatortest.BinaryRun)
	if !ok {
		return fmt.Errorf("%s: not a process", r.name)
	}
	if err := b.Kill(); err != nil {
		return fmt.Errorf("killing %s: %w", r.name, err)
	}
	r.killed = time.Now()
	return nil
}

// reconciledBy creates a Playbook and waits until the controllers made its
// notes: only a leader runs them.
func reconciledBy(ctx context.Context, c client.Client, name string) error {
	pb := &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: opsv1.PlaybookSpec{Abstract: "reconciled by the leader"}}
	if err := c.Create(ctx, pb); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, operatortest.Reconcile)
	defer cancel()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pb), pb); err == nil &&
			meta.IsStatusConditionTrue(pb.Status.Conditions, opsv1.ConditionReady) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not Ready within %s", operatortest.Reconcile)
		case <-time.After(operatortest.Poll):
		}
	}
}

// leaderIntervals reads r's log for the times it started and stopped
// acting as leader. A start without a logged stop ends when the process
// was killed or exited, or is still open.
func leaderIntervals(r *replica) ([]LeaderInterval, error) {
	f, err := os.Open(r.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LeaderInterval
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		var line struct {
			Msg string `json:"msg"`
			At  string `json:"at"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.At == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, line.At)
		if err != nil {
			return nil, fmt.Errorf("%s: a leadership line with a bad time %q: %w", r.log, line.At, err)
		}
		switch line.Msg {
		case manager.LeaderLogMessage:
			out = append(out, LeaderInterval{Process: r.name, Start: at})
		case manager.LeaderStopMessage:
			if n := len(out); n > 0 && out[n-1].End.IsZero() {
				out[n-1].End, out[n-1].EndedBy = at, "stopped"
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n := len(out); n > 0 && out[n-1].End.IsZero() {
		switch {
		case !r.killed.IsZero():
			out[n-1].End, out[n-1].EndedBy = r.killed, "SIGKILL"
		case r.stopped:
			out[n-1].EndedBy = "exited without logging its end"
		}
	}
	return out, nil
}
