package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
	"github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned/fake"
	informers "github.com/kubeharness/kubeharness/operator/vm/generated/informers/externalversions"
)

// fixture is a controller over a fake clientset and a fake driver, whose
// syncHandler the tests call directly, as k8s.io/sample-controller's tests
// do; the informer's cache is fed by hand from the clientset.
type fixture struct {
	t       *testing.T
	client  *fake.Clientset
	drv     *driver.Fake
	rec     *record.FakeRecorder
	c       *Controller
	indexer cache.Indexer
	opts    Options
}

func newFixture(t *testing.T, objs ...*cloudv1.VirtualMachine) *fixture {
	t.Helper()
	f := &fixture{t: t, drv: driver.NewFake(), rec: record.NewFakeRecorder(100), opts: DefaultOptions()}
	f.client = fake.NewSimpleClientset()
	for _, o := range objs {
		if _, err := f.client.CloudnativeV1alpha1().VirtualMachines(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(f.client, 0)
	inf := factory.Cloudnative().V1alpha1().VirtualMachines()
	c, err := NewController(context.Background(), f.client, inf, f.drv, f.rec, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	f.c, f.indexer = c, inf.Informer().GetIndexer()
	for _, o := range objs {
		f.refresh(o.Namespace, o.Name)
	}
	return f
}

func newVM(name string) *cloudv1.VirtualMachine {
	return &cloudv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: cloudv1.VirtualMachineSpec{Resource: cloudv1.VirtualMachineResource{
			CPU: resource.MustParse("500m"), Memory: resource.MustParse("64Mi"),
		}},
	}
}

func withFinalizer(vm *cloudv1.VirtualMachine) *cloudv1.VirtualMachine {
	vm.Finalizers = []string{Finalizer}
	return vm
}

// refresh copies the stored VirtualMachine into the informer's cache, as
// the watch would.
func (f *fixture) refresh(ns, name string) {
	f.t.Helper()
	vm, err := f.client.CloudnativeV1alpha1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		if err := f.indexer.Delete(&cloudv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if err := f.indexer.Update(vm); err != nil {
		f.t.Fatal(err)
	}
}

// sync runs syncHandler for team/name, then refreshes the cache.
func (f *fixture) sync(name string) (time.Duration, error) {
	f.t.Helper()
	f.client.ClearActions()
	after, err := f.c.syncHandler(context.Background(), cache.ObjectName{Namespace: "team", Name: name})
	f.refresh("team", name)
	return after, err
}

func (f *fixture) mustSync(name string) time.Duration {
	f.t.Helper()
	after, err := f.sync(name)
	if err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return after
}

func (f *fixture) get(name string) *cloudv1.VirtualMachine {
	f.t.Helper()
	vm, err := f.client.CloudnativeV1alpha1().VirtualMachines("team").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return vm
}

// writes lists the verbs (and subresources) of the last sync's writes.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		w := a.GetVerb()
		if a.GetSubresource() != "" {
			w += "/" + a.GetSubresource()
		}
		out = append(out, w)
	}
	return out
}

func (f *fixture) events() string {
	var evs []string
	for {
		select {
		case e := <-f.rec.Events:
			evs = append(evs, e)
		default:
			return strings.Join(evs, "\n")
		}
	}
}

func TestSyncAddsTheFinalizerFirst(t *testing.T) {
	f := newFixture(t, newVM("a"))
	if after := f.mustSync("a"); after != 0 {
		t.Errorf("requeue after %s; the finalizer's update brings it back", after)
	}
	if got := f.writes(); len(got) != 1 || got[0] != "update" {
		t.Errorf("writes %v, want one update (the finalizer)", got)
	}
	if got := f.get("a").Finalizers; len(got) != 1 || got[0] != Finalizer {
		t.Errorf("finalizers %v", got)
	}
	if c := f.drv.Calls(); c.Create != 0 {
		t.Errorf("a server was created before the finalizer was in place: %+v", c)
	}
}

func TestSyncCreatesTheServerAndReportsIt(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	after := f.mustSync("a")
	if after != f.opts.UsageRefresh {
		t.Errorf("requeue after %s, want the usage refresh %s", after, f.opts.UsageRefresh)
	}
	servers := f.drv.List()
	if len(servers) != 1 || !servers[0].Server.Running {
		t.Fatalf("servers %+v, want one running", servers)
	}
	m := servers[0].Machine
	if m.UID != "uid-a" || m.Image != f.opts.DefaultImage || m.CPU.Cmp(resource.MustParse("500m")) != 0 || m.Memory.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("server made for %+v", m)
	}
	st := f.get("a").Status
	if st.Phase != cloudv1.VirtualMachineActive || st.Server.ID != servers[0].Server.ID || st.Server.State != driver.StateRunning {
		t.Errorf("status %+v", st)
	}
	if st.Server.Usage.CPU == 0 || st.Server.Usage.Memory == 0 || st.LastUpdateTime == nil || st.ObservedGeneration != 1 {
		t.Errorf("status lacks usage, time or generation: %+v", st)
	}
	if ready := findCondition(st.Conditions, cloudv1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready condition %+v", ready)
	}
	for _, w := range f.writes() {
		if w == "update" {
			t.Error("status written with Update instead of UpdateStatus")
		}
	}
	if evs := f.events(); !strings.Contains(evs, "Normal "+ReasonCreated) {
		t.Errorf("events %q lack %s", evs, ReasonCreated)
	}
}

func TestSyncKeepsEachVirtualMachineOnItsOwnServer(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")), withFinalizer(newVM("b")))
	f.mustSync("a")
	f.mustSync("b")
	a, b := f.get("a").Status.Server.ID, f.get("b").Status.Server.ID
	if a == "" || b == "" || a == b {
		t.Fatalf("servers %q and %q, want two", a, b)
	}
	for _, s := range f.drv.List() {
		want := map[string]string{"uid-a": a, "uid-b": b}[s.Machine.UID]
		if s.Server.ID != want {
			t.Errorf("server %s made for %s, whose status names %s", s.Server.ID, s.Machine.UID, want)
		}
	}
}

func TestSyncDoesNotRewriteAnUnchangedStatus(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	f.drv.SetUsageFunc(func(driver.Machine, int) driver.Usage { return driver.Usage{CPU: 12.5, Memory: 40} })
	f.mustSync("a")
	rv := f.get("a").ResourceVersion
	for range 3 {
		f.mustSync("a")
		if w := f.writes(); len(w) != 0 {
			t.Fatalf("an unchanged status was written: %v", w)
		}
	}
	if got := f.get("a").ResourceVersion; got != rv {
		t.Errorf("resourceVersion moved from %s to %s", rv, got)
	}
	if c := f.drv.Calls(); c.Create != 1 {
		t.Errorf("%d creates for one server", c.Create)
	}
	// Usage that moves is written.
	f.drv.SetUsageFunc(func(driver.Machine, int) driver.Usage { return driver.Usage{CPU: 80, Memory: 40} })
	f.mustSync("a")
	if got := f.get("a").Status.Server.Usage.CPU; got != 80 {
		t.Errorf("usage CPU %v after it changed, want 80", got)
	}
}

func TestSyncReportsAMissingImageAndWaits(t *testing.T) {
	vm := withFinalizer(newVM("a"))
	vm.Spec.Image = "example.test/absent:v1"
	f := newFixture(t, vm)
	f.drv.SetImagePresent("example.test/absent:v1", false)
	after, err := f.sync("a")
	if err != nil {
		t.Fatalf("a missing image went back with backoff (hot loop risk): %v", err)
	}
	if after != f.opts.FailedRetry {
		t.Errorf("retry after %s, want %s", after, f.opts.FailedRetry)
	}
	st := f.get("a").Status
	if st.Phase != cloudv1.VirtualMachineFailed || !strings.Contains(st.Reason, "example.test/absent:v1") {
		t.Errorf("status %+v, want Failed naming the image", st)
	}
	if c := findCondition(st.Conditions, cloudv1.ConditionReady); c == nil || c.Reason != ReasonImageNotFound {
		t.Errorf("Ready condition %+v, want reason %s", c, ReasonImageNotFound)
	}
	// Another attempt while the image is still missing writes nothing.
	if _, err := f.sync("a"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("a retry that failed the same way wrote %v", w)
	}
	// The image arrives: the next attempt makes the server.
	f.drv.SetImagePresent("example.test/absent:v1", true)
	f.mustSync("a")
	if st := f.get("a").Status; st.Phase != cloudv1.VirtualMachineActive || st.Reason != "" {
		t.Errorf("after the image arrived: %+v", st)
	}
}

func TestSyncBacksOffOnATransientDriverErrorAndRecovers(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	f.drv.FailNext(driver.OpCreate, 1, errors.New("daemon busy at tcp://10.0.0.5:2376: only 2 CPUs available"))
	if _, err := f.sync("a"); err == nil {
		t.Fatal("a transient failure was not returned for backoff")
	}
	st := f.get("a").Status
	if st.Phase != cloudv1.VirtualMachineFailed || !strings.Contains(st.Reason, "the driver failed") {
		t.Errorf("status %+v, want Failed saying the driver failed", st)
	}
	// The daemon's words (its address, the host's size) are the
	// operator's, in the log; the tenant's status does not carry them.
	if strings.Contains(st.Reason, "10.0.0.5") || strings.Contains(st.Reason, "CPUs") {
		t.Errorf("status reason %q carries the driver's details", st.Reason)
	}
	if evs := f.events(); !strings.Contains(evs, "Warning "+ReasonDriverError) {
		t.Errorf("events %q lack a %s warning", evs, ReasonDriverError)
	}
	f.mustSync("a")
	if st := f.get("a").Status; st.Phase != cloudv1.VirtualMachineActive {
		t.Errorf("did not recover: %+v", st)
	}
}

func TestSyncNoticesAServerStoppedOrRemovedBehindItsBack(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	f.mustSync("a")
	first := f.get("a").Status.Server.ID

	f.drv.Stop("team", "a")
	f.mustSync("a")
	if evs := f.events(); !strings.Contains(evs, ReasonServerStopped) {
		t.Errorf("events %q do not report the stopped server", evs)
	}
	if s := f.drv.List(); len(s) != 1 || !s[0].Server.Running || s[0].Server.ID != first {
		t.Errorf("the stopped server was not started again: %+v", s)
	}

	f.drv.Remove("team", "a")
	f.mustSync("a")
	if evs := f.events(); !strings.Contains(evs, ReasonServerGone) {
		t.Errorf("events %q do not report the removed server", evs)
	}
	st := f.get("a").Status
	if st.Phase != cloudv1.VirtualMachineActive || st.Server.ID == first || st.Server.ID == "" {
		t.Errorf("status %+v, want Active on a new server", st)
	}
}

func TestSyncNeverTouchesAServerItDoesNotOwn(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	foreign := f.drv.AddForeign("team", "a", "")
	after, err := f.sync("a")
	if err != nil || after != f.opts.FailedRetry {
		t.Errorf("sync = %s, %v; want a retry after %s without backoff", after, err, f.opts.FailedRetry)
	}
	st := f.get("a").Status
	if c := findCondition(st.Conditions, cloudv1.ConditionReady); st.Phase != cloudv1.VirtualMachineFailed || c == nil || c.Reason != ReasonNotOwned {
		t.Errorf("status %+v, want Failed with reason %s", st, ReasonNotOwned)
	}
	if strings.Contains(st.Reason, foreign) || strings.Contains(c2s(st.Conditions), foreign) {
		t.Errorf("status %+v carries the foreign server's ID %s", st, foreign)
	}
	if s := f.drv.List(); len(s) != 1 || s[0].Server.ID != foreign || !s[0].Server.Running {
		t.Errorf("the foreign server was changed: %+v", s)
	}
	if c := f.drv.Calls(); c.Delete != 0 {
		t.Errorf("%d deletes", c.Delete)
	}
}

func TestFinalizeRemovesTheServerThenTheFinalizer(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	f.mustSync("a")
	vm := f.get("a")
	now := metav1.Now()
	vm.DeletionTimestamp = &now
	if _, err := f.client.CloudnativeV1alpha1().VirtualMachines("team").Update(context.Background(), vm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh("team", "a")
	f.drv.FailNext(driver.OpDelete, 1, errors.New("daemon busy"))
	if _, err := f.sync("a"); err == nil {
		t.Fatal("a failed delete was not retried")
	}
	got := f.get("a")
	if len(got.Finalizers) != 1 || got.Status.Phase != cloudv1.VirtualMachineTerminating {
		t.Fatalf("after a failed delete: finalizers %v, phase %s; want the finalizer kept, Terminating", got.Finalizers, got.Status.Phase)
	}
	f.mustSync("a")
	if s := f.drv.List(); len(s) != 0 {
		t.Errorf("servers left: %+v", s)
	}
	if got := f.get("a").Finalizers; len(got) != 0 {
		t.Errorf("finalizers left: %v", got)
	}
	if evs := f.events(); !strings.Contains(evs, ReasonDeleted) {
		t.Errorf("events %q lack %s", evs, ReasonDeleted)
	}
}

func TestSyncIgnoresAVirtualMachineThatIsGone(t *testing.T) {
	f := newFixture(t)
	after, err := f.sync("gone")
	if err != nil || after != 0 {
		t.Errorf("sync of a missing VirtualMachine = %s, %v", after, err)
	}
	if c := f.drv.Calls(); c != (driver.Calls{}) {
		t.Errorf("driver called: %+v", c)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
}

// TestProcessNextWorkItemRequeues: an error goes back rate-limited, a
// refresh comes back after its delay, a success forgets the failures.
func TestProcessNextWorkItemRequeues(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	key := cache.ObjectName{Namespace: "team", Name: "a"}
	f.drv.FailNext(driver.OpCreate, 1, errors.New("daemon busy"))
	f.c.queue.Add(key)
	if !f.c.processNextWorkItem(context.Background()) {
		t.Fatal("queue shut down")
	}
	if n := f.c.queue.NumRequeues(key); n != 1 {
		t.Errorf("requeues after a failure = %d, want 1", n)
	}
	f.refresh("team", "a")
	// The rate-limited retry arrives after a few milliseconds.
	f.c.processNextWorkItem(context.Background())
	if n := f.c.queue.NumRequeues(key); n != 0 {
		t.Errorf("requeues after a success = %d, want 0 (forgotten)", n)
	}
	f.c.queue.ShutDown()
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func TestSyncReplacesAServerWhoseSpecChanged(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	f.mustSync("a")
	first := f.get("a").Status.Server.ID
	vm := f.get("a")
	vm.Spec.Resource.CPU = resource.MustParse("2")
	vm.Generation++
	if _, err := f.client.CloudnativeV1alpha1().VirtualMachines("team").Update(context.Background(), vm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh("team", "a")
	f.mustSync("a")
	s := f.drv.List()
	if len(s) != 1 || s[0].Server.ID == first || s[0].Server.CPU.Cmp(resource.MustParse("2")) != 0 {
		t.Fatalf("servers %+v, want one new server with 2 CPUs", s)
	}
	if st := f.get("a").Status; st.Server.ID != s[0].Server.ID || st.ObservedGeneration != 2 {
		t.Errorf("status %+v", st)
	}
	if evs := f.events(); !strings.Contains(evs, ReasonReplacing) {
		t.Errorf("events %q lack %s", evs, ReasonReplacing)
	}
}

// TestStatusOnlyUpdatesAreNotQueued: the controller's own status writes
// must not queue the VirtualMachine again (that would read usage and write
// it in a loop); spec, finalizer and deletion changes must.
func TestStatusOnlyUpdatesAreNotQueued(t *testing.T) {
	f := newFixture(t)
	old := withFinalizer(newVM("a"))
	old.ResourceVersion = "1"
	next := func(mutate func(*cloudv1.VirtualMachine)) *cloudv1.VirtualMachine {
		n := old.DeepCopy()
		n.ResourceVersion = "2"
		mutate(n)
		return n
	}
	for name, tc := range map[string]struct {
		cur  *cloudv1.VirtualMachine
		want int
	}{
		"resync":        {old.DeepCopy(), 0},
		"status only":   {next(func(v *cloudv1.VirtualMachine) { v.Status.Server.Usage.CPU = 42 }), 0},
		"spec":          {next(func(v *cloudv1.VirtualMachine) { v.Generation++ }), 1},
		"finalizers":    {next(func(v *cloudv1.VirtualMachine) { v.Finalizers = nil }), 1},
		"being deleted": {next(func(v *cloudv1.VirtualMachine) { now := metav1.Now(); v.DeletionTimestamp = &now }), 1},
	} {
		f.c.onUpdate(old, tc.cur)
		if got := f.c.queue.Len(); got != tc.want {
			t.Errorf("%s: %d queued, want %d", name, got, tc.want)
		}
		for f.c.queue.Len() > 0 {
			k, _ := f.c.queue.Get()
			f.c.queue.Done(k)
			f.c.queue.Forget(k)
		}
	}
}

func c2s(conds []metav1.Condition) string {
	var b strings.Builder
	for _, c := range conds {
		b.WriteString(c.Reason + ": " + c.Message + "\n")
	}
	return b.String()
}

// TestSyncCreatesOnlyWhenTheStoredObjectHasTheFinalizer: the cache still
// shows the finalizer a user has just removed; creating the server then
// would leave it behind when the VirtualMachine goes without the
// finalizer.
func TestSyncCreatesOnlyWhenTheStoredObjectHasTheFinalizer(t *testing.T) {
	// Failed, so that no status is written before the create: the fake
	// clientset would store the cache's finalizer with it, which the API
	// server's status subresource does not.
	vm := newVM("a")
	vm.Status.Phase = cloudv1.VirtualMachineFailed
	f := newFixture(t, vm)
	stale := withFinalizer(f.get("a"))
	if err := f.indexer.Update(stale); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()
	if _, err := f.c.syncHandler(context.Background(), cache.ObjectName{Namespace: "team", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if c := f.drv.Calls(); c.Create != 0 {
		t.Fatalf("a server was created while the stored VirtualMachine has no finalizer: %+v", c)
	}
	if got := f.get("a").Finalizers; !slices.Contains(got, Finalizer) {
		t.Fatalf("finalizers %v: the finalizer was not added back", got)
	}
	f.refresh("team", "a")
	f.mustSync("a")
	if st := f.get("a").Status; st.Phase != cloudv1.VirtualMachineActive {
		t.Fatalf("once the finalizer is stored: status %+v, want Active", st)
	}
}

// TestSyncReplacesAnOrphanHoldingItsName: a server of an earlier
// VirtualMachine of the same name (deleted without the finalizer) is
// removed, with an Event, and the new one gets its server.
func TestSyncReplacesAnOrphanHoldingItsName(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	orphan := f.drv.AddForeign("team", "a", "uid-of-the-deleted-a")
	after, err := f.sync("a")
	if err != nil || after != f.opts.UsageRefresh {
		t.Fatalf("sync = %s, %v", after, err)
	}
	st := f.get("a").Status
	if st.Phase != cloudv1.VirtualMachineActive || st.Server.ID == orphan || st.Server.ID == "" {
		t.Fatalf("status %+v, want Active on a new server, not %s", st, orphan)
	}
	if evs := f.events(); !strings.Contains(evs, ReasonOrphanRemoved) || !strings.Contains(evs, "uid-of-the-deleted-a") {
		t.Errorf("events %q do not report the orphan removed", evs)
	}
	if s := f.drv.List(); len(s) != 1 || s[0].Machine.UID != "uid-a" {
		t.Errorf("servers %+v, want only a's", s)
	}
}

// TestDeletedWithoutTheFinalizerLosesItsServer: a VirtualMachine whose
// finalizer a user removed goes at once; its deletion, seen by the
// informer, removes its server.
func TestDeletedWithoutTheFinalizerLosesItsServer(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("a")))
	f.mustSync("a")
	vm := f.get("a")
	if err := f.client.CloudnativeV1alpha1().VirtualMachines("team").Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh("team", "a")
	f.c.onDelete(cache.DeletedFinalStateUnknown{Key: "team/a", Obj: vm})
	f.mustSync("a")
	if s := f.drv.List(); len(s) != 0 {
		t.Fatalf("servers left: %+v", s)
	}
	if evs := f.events(); !strings.Contains(evs, ReasonOrphanRemoved) {
		t.Errorf("events %q lack %s", evs, ReasonOrphanRemoved)
	}
}

// TestSweepRemovesOnlyOrphans: a server whose VirtualMachine is gone goes;
// one whose VirtualMachine the API server has, but the cache does not yet,
// stays, as do the servers of cached VirtualMachines and foreign ones.
func TestSweepRemovesOnlyOrphans(t *testing.T) {
	f := newFixture(t, withFinalizer(newVM("cached")))
	f.mustSync("cached")
	ctx := context.Background()
	uncached := withFinalizer(newVM("uncached"))
	if _, err := f.client.CloudnativeV1alpha1().VirtualMachines("team").Create(ctx, uncached, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.drv.AddForeign("team", "uncached", "uid-uncached")
	orphan := f.drv.AddForeign("gone-ns", "gone", "uid-gone")
	f.drv.AddForeign("team", "foreign", "")
	// Same name as a VirtualMachine that exists, but an older UID.
	f.drv.AddForeign("other", "x", "uid-old-x")
	if _, err := f.client.CloudnativeV1alpha1().VirtualMachines("other").Create(ctx, &cloudv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "x", UID: "uid-new-x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.events()

	f.c.sweep(ctx)
	var left []string
	for _, s := range f.drv.List() {
		left = append(left, s.Server.Name)
		if s.Server.ID == orphan {
			t.Errorf("the orphan %s is still there", orphan)
		}
	}
	if want := []string{"team_cached", "team_foreign", "team_uncached"}; !slices.Equal(left, want) {
		t.Errorf("servers left %v, want %v", left, want)
	}
	evs := f.events()
	for _, want := range []string{"gone-ns/gone (uid uid-gone)", "other/x (uid uid-old-x)"} {
		if !strings.Contains(evs, ReasonOrphanRemoved) || !strings.Contains(evs, want) {
			t.Errorf("events %q do not name %s", evs, want)
		}
	}
}

// TestSyncRefusesMoreThanTheCapacity: limits above the host's, or above
// the operator's maximum, leave the VirtualMachine Failed without a server,
// and say so without telling the limit.
func TestSyncRefusesMoreThanTheCapacity(t *testing.T) {
	huge := withFinalizer(newVM("huge"))
	huge.Spec.Resource.Memory = resource.MustParse("1Ei")
	wide := withFinalizer(newVM("wide"))
	wide.Spec.Resource.CPU = resource.MustParse("3")
	f := newFixture(t, huge, wide)
	f.drv.SetCapacity(driver.Capacity{CPU: resource.MustParse("4"), Memory: resource.MustParse("23Gi")})
	f.c.opts.MaxCPU = resource.MustParse("2")
	for _, name := range []string{"huge", "wide"} {
		f.mustSync(name)
		st := f.get(name).Status
		c := meta.FindStatusCondition(st.Conditions, cloudv1.ConditionReady)
		if st.Phase != cloudv1.VirtualMachineFailed || c == nil || c.Reason != ReasonTooLarge || !strings.Contains(st.Reason, "is more than") {
			t.Errorf("%s: status %+v, want Failed with reason %s", name, st, ReasonTooLarge)
		}
		if strings.Contains(st.Reason, "23Gi") || strings.Contains(st.Reason, " 2 ") || strings.Contains(st.Reason, " 4 ") {
			t.Errorf("%s: status reason %q tells the limit", name, st.Reason)
		}
	}
	if c := f.drv.Calls(); c.Create != 0 {
		t.Errorf("%d creates", c.Create)
	}
}

// TestStatusMessageTellsATLSFailureWithoutTheDaemonsDetails: a tenant
// learns that the controller cannot talk to its daemon over TLS, and
// nothing of where the daemon is or which files hold its keys.
func TestStatusMessageTellsATLSFailureWithoutTheDaemonsDetails(t *testing.T) {
	err := driver.Permanent(fmt.Errorf("docker driver: create container: %w: %w", driver.ErrTLS,
		errors.New("the daemon at tcp://docker-host.kubeharness:2376 refused the TLS handshake; is the client certificate /certs/cert.pem signed by a CA it trusts?")))
	msg := statusMessage("creating the server", err)
	if !strings.Contains(msg, "TLS") {
		t.Errorf("the status does not say the failure is TLS: %q", msg)
	}
	for _, secret := range []string{"docker-host.kubeharness", "2376", "/certs/"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the status %q carries %q", msg, secret)
		}
	}
}
