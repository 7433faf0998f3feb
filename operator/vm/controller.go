package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	clientset "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned"
	informers "github.com/kubeharness/kubeharness/operator/vm/generated/informers/externalversions/cloudnative/v1alpha1"
	listers "github.com/kubeharness/kubeharness/operator/vm/generated/listers/cloudnative/v1alpha1"

	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// The controller's permissions, generated into config/vm/rbac: it reads
// and watches VirtualMachines, writes their finalizers (update) and status,
// and records Events. It creates nothing else in the cluster.
//
// +kubebuilder:rbac:groups=cloudnative.kubeharness.dev,resources=virtualmachines,verbs=list;watch;update
// +kubebuilder:rbac:groups=cloudnative.kubeharness.dev,resources=virtualmachines/status,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// ControllerName is the controller's name in Events, logs and the workqueue.
const ControllerName = "vm-controller"

// Finalizer keeps a VirtualMachine until its server is gone.
const Finalizer = "cloudnative.kubeharness.dev/server-cleanup"

// Event reasons and status reasons.
const (
	ReasonCreating       = "Creating"
	ReasonCreated        = "Created"
	ReasonRunning        = "Running"
	ReasonServerStopped  = "ServerStopped"
	ReasonReplacing      = "Replacing"
	ReasonServerGone     = "ServerGone"
	ReasonImageNotFound  = "ImageNotFound"
	ReasonNotOwned       = "ServerNotOwned"
	ReasonDriverError    = "DriverError"
	ReasonInvalidSpec    = "InvalidSpec"
	ReasonDeleting       = "Deleting"
	ReasonDeleted        = "ServerDeleted"
	ReasonUsageError     = "UsageUnavailable"
	ReasonFinalizerAdded = "FinalizerAdded"
	ReasonTooLarge       = "ResourcesTooLarge"
	// ReasonOrphanRemoved is the Event of a server removed because its
	// VirtualMachine is gone: by the sweep, after a deletion seen without
	// the finalizer, or to free the name for a new VirtualMachine of the
	// same name. It is recorded about the gone VirtualMachine (its
	// namespace, name and UID).
	ReasonOrphanRemoved = "OrphanRemoved"
)

// Options configure the controller.
type Options struct {
	// DefaultImage runs for a VirtualMachine without spec.image.
	DefaultImage string
	// UsageRefresh is how often a running server's usage is read and, when
	// it changed, written to the status.
	UsageRefresh time.Duration
	// FailedRetry is how long a VirtualMachine whose server cannot be made
	// for a reason a retry will not fix soon (a missing image, a name taken
	// by a foreign container) waits before the next attempt. A change of
	// the VirtualMachine retries at once.
	FailedRetry time.Duration
	// RateLimiter backs off failing keys; nil means the client-go default
	// (5 ms doubling up to 1000 s, 10 qps overall). It is an object of the
	// process that made it, so Options cross a process boundary as JSON
	// without it.
	RateLimiter workqueue.TypedRateLimiter[cache.ObjectName] `json:"-"`
	// OrphanSweep is how often the driver's servers are compared with the
	// VirtualMachines, and those whose VirtualMachine is gone removed (one
	// sweep also runs at start-up). Zero means DefaultOrphanSweep.
	OrphanSweep time.Duration
	// MaxCPU and MaxMemory are the most a VirtualMachine may ask for; a
	// zero one means the driver's capacity (what the host has). A larger
	// one than the capacity is no use: the capacity still applies.
	MaxCPU, MaxMemory resource.Quantity
}

// DefaultOrphanSweep is Options.OrphanSweep's default.
const DefaultOrphanSweep = 5 * time.Minute

// DefaultOptions are the settings of a controller started without flags.
func DefaultOptions() Options {
	return Options{DefaultImage: "kubeharness/vm:v0.1.0", UsageRefresh: 20 * time.Second, FailedRetry: time.Minute, OrphanSweep: DefaultOrphanSweep}
}

// Controller turns VirtualMachines into servers of a driver, in the style
// of k8s.io/sample-controller: a shared informer feeds a rate-limited
// workqueue of namespace/name keys, and workers run syncHandler for each.
type Controller struct {
	client   clientset.Interface
	lister   listers.VirtualMachineLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
	driver   driver.Driver
	opts     Options
	now      func() time.Time

	// gone holds the UIDs of VirtualMachines seen deleted, by key, until
	// the key's next sync removes their servers: a VirtualMachine deleted
	// without the finalizer (a user can remove it) leaves its server
	// behind otherwise.
	mu   sync.Mutex
	gone map[cache.ObjectName][]types.UID
}

// NewController wires the controller to informer's VirtualMachines.
func NewController(ctx context.Context, client clientset.Interface, informer informers.VirtualMachineInformer,
	drv driver.Driver, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if opts.UsageRefresh <= 0 || opts.FailedRetry <= 0 {
		return nil, fmt.Errorf("usage refresh (%s) and failed retry (%s) must be positive", opts.UsageRefresh, opts.FailedRetry)
	}
	if opts.DefaultImage == "" {
		return nil, errors.New("a default image is needed for VirtualMachines without spec.image")
	}
	if opts.OrphanSweep < 0 {
		return nil, fmt.Errorf("the orphan sweep period (%s) must not be negative", opts.OrphanSweep)
	}
	if opts.OrphanSweep == 0 {
		opts.OrphanSweep = DefaultOrphanSweep
	}
	if opts.MaxCPU.Sign() < 0 || opts.MaxMemory.Sign() < 0 {
		return nil, fmt.Errorf("the largest CPU (%s) and memory (%s) of a VirtualMachine must not be negative", opts.MaxCPU.String(), opts.MaxMemory.String())
	}
	limiter := opts.RateLimiter
	if limiter == nil {
		limiter = workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()
	}
	c := &Controller{
		client:   client,
		lister:   informer.Lister(),
		synced:   informer.Informer().HasSynced,
		queue:    workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "VirtualMachines"}),
		recorder: recorder,
		driver:   drv,
		opts:     opts,
		now:      time.Now,
		gone:     map[cache.ObjectName][]types.UID{},
	}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.onUpdate,
		DeleteFunc: c.onDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("watching VirtualMachines: %w", err)
	}
	return c, nil
}

// onUpdate queues a VirtualMachine whose spec or metadata that matters
// changed. A change of its status alone (the controller's own writes) is
// not queued: the key is already queued for the next usage refresh, and
// queueing it would read usage again at once, write it, and so on in a hot
// loop. A resync delivers the same version again, which is skipped too.
func (c *Controller) onUpdate(old, cur any) {
	o, n := old.(*cloudv1.VirtualMachine), cur.(*cloudv1.VirtualMachine)
	if o.ResourceVersion == n.ResourceVersion {
		return
	}
	if o.Generation == n.Generation && slices.Equal(o.Finalizers, n.Finalizers) &&
		o.DeletionTimestamp.Equal(n.DeletionTimestamp) {
		return
	}
	c.enqueue(cur)
}

// onDelete queues a deleted VirtualMachine's key with its UID: one that
// went with the finalizer had its server removed, but one whose finalizer
// a user removed did not, and neither did one whose server was being
// created as it went.
func (c *Controller) onDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	vm, ok := obj.(*cloudv1.VirtualMachine)
	if !ok {
		return
	}
	key := cache.ObjectName{Namespace: vm.Namespace, Name: vm.Name}
	c.mu.Lock()
	if !slices.Contains(c.gone[key], vm.UID) {
		c.gone[key] = append(c.gone[key], vm.UID)
	}
	c.mu.Unlock()
	c.queue.Add(key)
}

func (c *Controller) enqueue(obj any) {
	name, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(name)
}

// Run waits for the informer's cache, starts workers and blocks until ctx
// is done; then it shuts the queue down and waits for the workers.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	logger.Info("Starting the VirtualMachine controller", "driver", c.driver.Name(), "workers", workers)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		c.queue.ShutDown()
		if ctx.Err() != nil {
			return nil // stopped before the cache synced: a clean stop
		}
		return errors.New("the VirtualMachine informer did not sync")
	}
	done := make(chan struct{})
	running := workers + 1
	go func() {
		defer func() { done <- struct{}{} }()
		// At once (servers orphaned while no controller ran), then every
		// period.
		wait.UntilWithContext(ctx, c.sweep, c.opts.OrphanSweep)
	}()
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			wait.UntilWithContext(ctx, c.runWorker, time.Second)
		}()
	}
	logger.Info("Started workers")
	<-ctx.Done()
	logger.Info("Shutting down workers")
	c.queue.ShutDownWithDrain()
	for ; running > 0; running-- {
		<-done
	}
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one key. An error puts the key back with the
// rate limiter's backoff; success forgets its failures. A result asking
// for a later look (usage refresh, a retry of a failed create) adds the
// key after that delay.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "virtualmachine", key.String())
	after, err := c.syncHandler(klog.NewContext(ctx, logger), key)
	if err != nil {
		c.queue.AddRateLimited(key)
		logger.Error(err, "Syncing failed; retrying with backoff", "retries", c.queue.NumRequeues(key))
		return true
	}
	c.queue.Forget(key)
	if after > 0 {
		c.queue.AddAfter(key, after)
	}
	return true
}

// syncHandler converges one VirtualMachine: its server exists and runs
// as long as the VirtualMachine does, and its status says how it is. It
// returns when to look again (0: only when something changes).
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	vm, err := c.lister.VirtualMachines(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	current := types.UID("")
	if err == nil {
		current = vm.UID
	}
	if err := c.removeGone(ctx, key, current); err != nil {
		return 0, err
	}
	if vm == nil {
		return 0, nil // gone, and its server with it
	}
	// The cache's object is shared; this sync writes into its own copy.
	vm = vm.DeepCopy()
	if vm.DeletionTimestamp != nil {
		return 0, c.finalize(ctx, vm)
	}
	if !slices.Contains(vm.Finalizers, Finalizer) {
		// Nothing is created before the finalizer is stored; the update
		// brings the VirtualMachine back through the informer.
		return 0, c.setFinalizers(ctx, vm, append(slices.Clone(vm.Finalizers), Finalizer))
	}
	m, err := c.machine(vm)
	if err != nil {
		return 0, c.setStatus(ctx, vm, failed(vm, ReasonInvalidSpec, err.Error()))
	}
	if over, err := c.tooLarge(ctx, m); err != nil {
		return c.driverFailed(ctx, vm, "reading the driver's capacity", err)
	} else if over != "" {
		return 0, c.setStatus(ctx, vm, failed(vm, ReasonTooLarge, over+"; ask for less"))
	}
	return c.ensureServer(ctx, vm, m)
}

// tooLarge says what of m is above the largest a VirtualMachine may ask
// for (MaxCPU, MaxMemory, and the driver's capacity), "" when nothing is.
// The message does not tell the limits: the host's size is not the
// tenant's to know.
func (c *Controller) tooLarge(ctx context.Context, m driver.Machine) (string, error) {
	capacity, err := c.driver.Capacity(ctx)
	if err != nil {
		return "", err
	}
	if over := capacity.Exceeds(m); over != "" {
		return over, nil
	}
	return driver.Capacity{CPU: c.opts.MaxCPU, Memory: c.opts.MaxMemory}.Exceeds(m), nil
}

// removeGone removes the servers of the VirtualMachines seen deleted under
// key, but not current's (a VirtualMachine created again under the name
// has a new UID).
func (c *Controller) removeGone(ctx context.Context, key cache.ObjectName, current types.UID) error {
	c.mu.Lock()
	uids := slices.Clone(c.gone[key])
	c.mu.Unlock()
	for _, uid := range uids {
		if uid != current {
			if err := c.removeOrphan(ctx, driver.Machine{Namespace: key.Namespace, Name: key.Name, UID: string(uid)}, "its VirtualMachine was deleted"); err != nil {
				return err
			}
		}
		c.mu.Lock()
		c.gone[key] = slices.DeleteFunc(c.gone[key], func(u types.UID) bool { return u == uid })
		if len(c.gone[key]) == 0 {
			delete(c.gone, key)
		}
		c.mu.Unlock()
	}
	return nil
}

// removeOrphan removes the server of owner, a VirtualMachine that is gone,
// and says so in an Event about it and in the log.
func (c *Controller) removeOrphan(ctx context.Context, owner driver.Machine, why string) error {
	srv, exists, err := c.driver.Get(ctx, owner)
	if err != nil {
		return fmt.Errorf("looking up the server of %s: %w", owner, err)
	}
	if !exists {
		return nil
	}
	if err := c.driver.Delete(ctx, owner); err != nil {
		return fmt.Errorf("removing the server of %s: %w", owner, err)
	}
	msg := fmt.Sprintf("removed server %s of VirtualMachine %s/%s (uid %s): %s", srv.Name, owner.Namespace, owner.Name, owner.UID, why)
	klog.FromContext(ctx).Info("Removed an orphaned server", "server", srv.Name, "id", shortID(srv.ID),
		"namespace", owner.Namespace, "name", owner.Name, "uid", owner.UID, "why", why)
	ref := &corev1.ObjectReference{
		APIVersion: cloudv1.SchemeGroupVersion.String(), Kind: "VirtualMachine",
		Namespace: owner.Namespace, Name: owner.Name, UID: types.UID(owner.UID),
	}
	c.recorder.Event(ref, corev1.EventTypeNormal, ReasonOrphanRemoved, msg)
	return nil
}

// live returns the VirtualMachine namespace/name as the API server holds it
// now (not from the cache, which can lag behind), nil when there is none.
//
// It lists by name, as the controller may list VirtualMachines but not get
// them.
func (c *Controller) live(ctx context.Context, namespace, name string) (*cloudv1.VirtualMachine, error) {
	list, err := c.client.CloudnativeV1alpha1().VirtualMachines(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("reading VirtualMachine %s/%s: %w", namespace, name, err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// ownerGone reports whether no VirtualMachine namespace/name of uid
// exists, asking the API server.
func (c *Controller) ownerGone(ctx context.Context, owner driver.Machine) (bool, error) {
	if owner.Namespace == "" || owner.Name == "" || owner.UID == "" {
		return false, nil // not labelled as a VirtualMachine's: not ours to judge
	}
	if vm, err := c.lister.VirtualMachines(owner.Namespace).Get(owner.Name); err == nil && string(vm.UID) == owner.UID {
		return false, nil
	}
	vm, err := c.live(ctx, owner.Namespace, owner.Name)
	if err != nil {
		return false, err
	}
	return vm == nil || string(vm.UID) != owner.UID, nil
}

// sweep removes the driver's servers whose VirtualMachine is gone: one a
// user deleted after removing its finalizer, one whose VirtualMachine went
// while it was being created, one left while no controller ran.
func (c *Controller) sweep(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("orphan-sweep")
	ctx = klog.NewContext(ctx, logger)
	servers, err := c.driver.ListOwned(ctx)
	if err != nil {
		logger.Error(err, "Listing the servers")
		return
	}
	for _, s := range servers {
		gone, err := c.ownerGone(ctx, s.Owner)
		if err != nil {
			logger.Error(err, "Checking the VirtualMachine of a server", "server", s.Name)
			continue
		}
		if !gone {
			continue
		}
		if err := c.removeOrphan(ctx, s.Owner, "no VirtualMachine has its UID"); err != nil {
			logger.Error(err, "Removing an orphaned server", "server", s.Name)
		}
	}
}

// machine is what the driver needs to know of vm.
func (c *Controller) machine(vm *cloudv1.VirtualMachine) (driver.Machine, error) {
	image := vm.Spec.Image
	if image == "" {
		image = c.opts.DefaultImage
	}
	m := driver.Machine{
		Namespace: vm.Namespace, Name: vm.Name, UID: string(vm.UID), Image: image,
		CPU: vm.Spec.Resource.CPU, Memory: vm.Spec.Resource.Memory,
	}
	return m, m.Validate()
}

// ensureServer creates or restarts vm's server and reports it.
func (c *Controller) ensureServer(ctx context.Context, vm *cloudv1.VirtualMachine, m driver.Machine) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	srv, exists, err := c.driver.Get(ctx, m)
	if err != nil {
		return c.driverFailed(ctx, vm, "looking up the server", err)
	}
	if exists {
		if diff := outdated(srv, m); diff != "" {
			// A server cannot be resized or given another image in place.
			why := fmt.Sprintf("the server %s %s; replacing it", shortID(srv.ID), diff)
			logger.Info("Replacing the server", "why", why)
			c.recorder.Event(vm, corev1.EventTypeNormal, ReasonReplacing, why)
			if err := c.driver.Delete(ctx, m); err != nil {
				return c.driverFailed(ctx, vm, "removing the outdated server", err)
			}
			exists, srv = false, driver.Server{}
		}
	}
	if !exists || !srv.Running {
		why, reason := "creating the server", ReasonCreating
		if exists && srv.State != driver.StateRemoving {
			why, reason = fmt.Sprintf("the server %s is %s; starting it again", shortID(srv.ID), srv.State), ReasonServerStopped
		} else if vm.Status.Server.ID != "" {
			why, reason = fmt.Sprintf("the server %s is gone; creating it again", shortID(vm.Status.Server.ID)), ReasonServerGone
		}
		logger.Info("Making the server", "why", why)
		// A retry after a failure keeps the Failed status until it
		// succeeds: flipping to Creating and back on every attempt would
		// rewrite the VirtualMachine twice per retry.
		if vm.Status.Phase != cloudv1.VirtualMachineFailed && (vm.Status.Phase != cloudv1.VirtualMachineCreating || vm.Status.Reason != why) {
			c.recorder.Event(vm, eventType(reason), reason, why)
			st := vm.Status.DeepCopy()
			st.Phase, st.Reason = cloudv1.VirtualMachineCreating, why
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: cloudv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: why})
			if err := c.setStatus(ctx, vm, st); err != nil {
				return 0, err
			}
		}
		// The finalizer must be on the object the API server holds, not
		// only on the cache's copy: a user may have removed it since, and
		// a server created for a VirtualMachine that then goes without it
		// would outlive it.
		if ok, err := c.finalizerStored(ctx, vm); err != nil || !ok {
			return 0, err
		}
		if srv, err = c.create(ctx, vm, m); err != nil {
			return c.driverFailed(ctx, vm, "creating the server", err)
		}
		c.recorder.Eventf(vm, corev1.EventTypeNormal, ReasonCreated, "server %s runs %s with %s CPU and %s memory", shortID(srv.ID), m.Image, m.CPU.String(), m.Memory.String())
	}
	st := vm.Status.DeepCopy()
	st.Phase, st.Reason = cloudv1.VirtualMachineActive, ""
	st.Server.ID, st.Server.State = srv.ID, srv.State
	usage, err := c.driver.Usage(ctx, m)
	cond := metav1.Condition{Type: cloudv1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonRunning, Message: "the server runs"}
	if err != nil {
		// The server runs; only its numbers are missing this time.
		logger.Error(err, "Reading usage")
		cond.Message = "the server runs; its usage could not be read (the controller's log says why)"
		cond.Reason = ReasonUsageError
	} else {
		st.Server.Usage = cloudv1.ServerUsage{CPU: usage.CPU, Memory: usage.Memory}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if err := c.setStatus(ctx, vm, st); err != nil {
		return 0, err
	}
	return c.opts.UsageRefresh, nil
}

// finalizerStored reads vm from the API server and reports whether it has
// the finalizer there, adding it when it does not. false means not to
// create now: the VirtualMachine is gone or being deleted, or the
// finalizer was just added (its update brings the VirtualMachine back).
func (c *Controller) finalizerStored(ctx context.Context, vm *cloudv1.VirtualMachine) (bool, error) {
	cur, err := c.live(ctx, vm.Namespace, vm.Name)
	if err != nil {
		return false, err
	}
	if cur == nil || cur.UID != vm.UID || cur.DeletionTimestamp != nil {
		return false, nil
	}
	if slices.Contains(cur.Finalizers, Finalizer) {
		return true, nil
	}
	klog.FromContext(ctx).Info("The finalizer was removed; adding it again before creating the server")
	return false, c.setFinalizers(ctx, cur, append(slices.Clone(cur.Finalizers), Finalizer))
}

// create creates m's server. A server holding its name that belongs to a
// VirtualMachine of the same name that is gone (deleted without the
// finalizer) is removed first.
func (c *Controller) create(ctx context.Context, vm *cloudv1.VirtualMachine, m driver.Machine) (driver.Server, error) {
	srv, err := c.driver.Create(ctx, m)
	var notOwned *driver.NotOwnedError
	if !errors.As(err, &notOwned) || notOwned.OwnerUID == "" || notOwned.OwnerUID == m.UID {
		return srv, err
	}
	owner := driver.Machine{Namespace: notOwned.OwnerNamespace, Name: notOwned.OwnerName, UID: notOwned.OwnerUID}
	gone, gerr := c.ownerGone(ctx, owner)
	if gerr != nil || !gone {
		return srv, err
	}
	if rerr := c.removeOrphan(ctx, owner, fmt.Sprintf("no VirtualMachine has its UID, and its name is %s's", vm.Namespace+"/"+vm.Name)); rerr != nil {
		return srv, rerr
	}
	return c.driver.Create(ctx, m)
}

// outdated says how srv differs from what m asks for, or "" when it does
// not (or the driver does not report the field).
func outdated(srv driver.Server, m driver.Machine) string {
	var diffs []string
	if srv.Image != "" && srv.Image != m.Image {
		diffs = append(diffs, fmt.Sprintf("runs %s, not %s", srv.Image, m.Image))
	}
	if !srv.CPU.IsZero() && srv.CPU.Cmp(m.CPU) != 0 {
		diffs = append(diffs, fmt.Sprintf("has %s CPU, not %s", srv.CPU.String(), m.CPU.String()))
	}
	if !srv.Memory.IsZero() && srv.Memory.Cmp(m.Memory) != 0 {
		diffs = append(diffs, fmt.Sprintf("has %s memory, not %s", srv.Memory.String(), m.Memory.String()))
	}
	return strings.Join(diffs, " and ")
}

// driverFailed reports a driver error in the status. An error a retry will
// not fix soon waits FailedRetry; any other goes back with backoff.
func (c *Controller) driverFailed(ctx context.Context, vm *cloudv1.VirtualMachine, doing string, err error) (time.Duration, error) {
	reason := ReasonDriverError
	var notOwned *driver.NotOwnedError
	switch {
	case errors.Is(err, driver.ErrImageNotFound):
		reason = ReasonImageNotFound
	case errors.As(err, &notOwned):
		reason = ReasonNotOwned
	}
	msg := statusMessage(doing, err)
	if msg != fmt.Sprintf("%s: %v", doing, err) {
		klog.FromContext(ctx).Error(err, "Driver failed", "doing", doing)
	}
	c.recorder.Event(vm, corev1.EventTypeWarning, reason, msg)
	if serr := c.setStatus(ctx, vm, failed(vm, reason, msg)); serr != nil {
		return 0, serr
	}
	if driver.IsPermanent(err) {
		klog.FromContext(ctx).Info("Server cannot be made; retrying later", "reason", reason, "error", err.Error(), "after", c.opts.FailedRetry)
		return c.opts.FailedRetry, nil
	}
	return 0, err
}

// statusMessage says what went wrong doing something, in words for the
// VirtualMachine's status and Events, which its tenant reads: a machine
// the driver cannot run and a missing image as the driver says them (its
// words for those name the machine, not the host); a name taken by a
// server without another object's IDs; any other failure without its
// details (the daemon's address, the host's size), which the controller's
// log has.
func statusMessage(doing string, err error) string {
	var notOwned *driver.NotOwnedError
	switch {
	case errors.Is(err, driver.ErrInvalidMachine) || errors.Is(err, driver.ErrImageNotFound):
		return fmt.Sprintf("%s: %v", doing, err)
	case errors.As(err, &notOwned):
		return fmt.Sprintf("%s: the server name %q is taken by a server that is not this VirtualMachine's; it is left untouched (an operator can remove it)", doing, notOwned.Name)
	case errors.Is(err, driver.ErrTLS):
		return fmt.Sprintf("%s: the driver and its daemon do not trust each other's TLS certificates (the controller's log names the daemon and the files)", doing)
	case driver.IsPermanent(err):
		return fmt.Sprintf("%s: the driver refused (the controller's log says why)", doing)
	default:
		return fmt.Sprintf("%s: the driver failed; retrying (the controller's log says why)", doing)
	}
}

// failed is vm's status in phase Failed for reason.
func failed(vm *cloudv1.VirtualMachine, reason, msg string) *cloudv1.VirtualMachineStatus {
	st := vm.Status.DeepCopy()
	st.Phase, st.Reason = cloudv1.VirtualMachineFailed, msg
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: cloudv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	return st
}

// finalize removes vm's server, then the finalizer.
func (c *Controller) finalize(ctx context.Context, vm *cloudv1.VirtualMachine) error {
	if !slices.Contains(vm.Finalizers, Finalizer) {
		return nil
	}
	if vm.Status.Phase != cloudv1.VirtualMachineTerminating {
		st := vm.Status.DeepCopy()
		st.Phase, st.Reason = cloudv1.VirtualMachineTerminating, ""
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: cloudv1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonDeleting, Message: "removing the server"})
		if err := c.setStatus(ctx, vm, st); err != nil {
			return err
		}
	}
	m, err := c.machine(vm)
	if err == nil {
		err = c.driver.Delete(ctx, m)
	} else {
		// A spec the driver refuses made no server: its identity alone
		// finds any there is.
		m.Image = c.opts.DefaultImage
		err = c.driver.Delete(ctx, m)
	}
	if err != nil {
		c.recorder.Eventf(vm, corev1.EventTypeWarning, ReasonDriverError, "removing the server: %v", err)
		return fmt.Errorf("removing the server: %w", err)
	}
	c.recorder.Event(vm, corev1.EventTypeNormal, ReasonDeleted, "server removed")
	return c.setFinalizers(ctx, vm, slices.DeleteFunc(slices.Clone(vm.Finalizers), func(f string) bool { return f == Finalizer }))
}

// setFinalizers writes vm's finalizers, failing on a conflict: the
// informer brings the newer version.
func (c *Controller) setFinalizers(ctx context.Context, vm *cloudv1.VirtualMachine, finalizers []string) error {
	cp := vm.DeepCopy()
	cp.Finalizers = finalizers
	_, err := c.client.CloudnativeV1alpha1().VirtualMachines(vm.Namespace).Update(ctx, cp, metav1.UpdateOptions{FieldManager: ControllerName})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// setStatus writes st as vm's status through the status subresource,
// unless it says what the stored status says already: an unchanged status
// is never rewritten, so a VirtualMachine at rest keeps its
// resourceVersion.
func (c *Controller) setStatus(ctx context.Context, vm *cloudv1.VirtualMachine, st *cloudv1.VirtualMachineStatus) error {
	st.ObservedGeneration = vm.Generation
	st.LastUpdateTime = vm.Status.LastUpdateTime
	if equality.Semantic.DeepEqual(&vm.Status, st) {
		return nil
	}
	now := metav1.NewTime(c.now())
	st.LastUpdateTime = &now
	cp := vm.DeepCopy()
	cp.Status = *st
	updated, err := c.client.CloudnativeV1alpha1().VirtualMachines(vm.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{FieldManager: ControllerName})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	// Later steps of this sync build on what was written.
	*vm = *updated
	return nil
}

func eventType(reason string) string {
	if reason == ReasonCreating {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
