package faultenv

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/controller"
)

// Workload is what fault specs run through a fault: Playbooks created,
// read to 100 and deleted by their controller; AppServices created and
// scaled from 1 to 2; VirtualMachines created, run and deleted. It keeps
// every object's life moving on its own (Run) and then checks that
// everything arrived where it should (Done) and that nothing was lost or
// doubled on the way (Problems).
type Workload struct {
	Namespace                   string
	Playbooks, AppServices, VMs int

	c client.Client
	// check, when set, is the client Done reads with (VerifyWith).
	check client.Client

	mu       sync.Mutex
	created  map[string]bool // kind/name of every object whose create succeeded
	advanced map[string]bool // Playbooks set to 100, AppServices scaled, VMs deleted
	// unsure holds the Playbooks and VMs whose write to advance them got no
	// answer that says it was refused (a timeout, a broken connection, a
	// server error while etcd is down): the API server may have made it,
	// so their going is no loss.
	unsure    map[string]bool
	problems  []string // invariants broken on the way (duplicates, losses)
	writeErrs int      // writes that failed and were retried
}

// WorkloadRequestTimeout bounds each request the workload sends, so that a
// frozen API server delays it instead of hanging it.
const WorkloadRequestTimeout = 5 * time.Second

// NewWorkload returns a workload in namespace, sending its requests with
// cfg (an admin) under WorkloadRequestTimeout.
func NewWorkload(cfg *rest.Config, namespace string, playbooks, appServices, vms int) (*Workload, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = WorkloadRequestTimeout
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	return &Workload{
		Namespace: namespace, Playbooks: playbooks, AppServices: appServices, VMs: vms,
		c: c, created: map[string]bool{}, advanced: map[string]bool{}, unsure: map[string]bool{},
	}, nil
}

func (w *Workload) names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// VerifyWith makes Done read with cfg (an admin) rather than the
// workload's own client: for a workload whose own requests go through a
// fault, so that checking it converged does not suffer the fault too.
func (w *Workload) VerifyWith(cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	w.check = c
	return nil
}

func (w *Workload) checker() client.Client {
	if w.check != nil {
		return w.check
	}
	return w.c
}

// Run creates every object and moves each one on as its controller gets
// it there, until ctx ends or all is done; failed requests (expected while
// a fault lasts) are retried on the next pass.
func (w *Workload) Run(ctx context.Context) {
	for {
		w.pass(ctx)
		if w.Done(ctx) == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(operatortest.Poll):
		}
	}
}

func (w *Workload) mark(set map[string]bool, key string) {
	w.mu.Lock()
	set[key] = true
	w.mu.Unlock()
}

func (w *Workload) has(set map[string]bool, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return set[key]
}

func (w *Workload) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := fmt.Sprintf(format, args...)
	for _, seen := range w.problems {
		if seen == p {
			return
		}
	}
	w.problems = append(w.problems, p)
}

func (w *Workload) failed(err error) bool {
	if err == nil {
		return false
	}
	w.mu.Lock()
	w.writeErrs++
	w.mu.Unlock()
	return true
}

// advance records the outcome of the write that advances key: done, or
// failed (retried on the next pass) and, unless the answer says the API
// server refused it, perhaps made.
func (w *Workload) advance(key string, err error) {
	switch {
	case err == nil:
		w.mark(w.advanced, key)
	case !Refused(err):
		w.mark(w.unsure, key)
		w.failed(err)
	default:
		w.failed(err)
	}
}

// Refused reports whether err is an answer of the API server that says it
// did not make the write: a 4xx status (a conflict, a validation error, a
// refusal, too many requests). Anything else (no answer, a timeout, a
// server error) leaves open whether the write was made.
func Refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && !apierrors.IsTimeout(err)
}

// create creates obj unless it was; AlreadyExists after a create whose
// answer was lost means it was.
func (w *Workload) create(ctx context.Context, key string, obj client.Object) {
	if w.has(w.created, key) {
		return
	}
	err := w.c.Create(ctx, obj)
	if err == nil || apierrors.IsAlreadyExists(err) {
		w.mark(w.created, key)
		return
	}
	w.failed(err)
}

func (w *Workload) pass(ctx context.Context) {
	for _, name := range w.names("pb", w.Playbooks) {
		w.create(ctx, "Playbook/"+name, &opsv1.Playbook{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace},
			Spec:       opsv1.PlaybookSpec{Abstract: "fault workload " + name},
		})
	}
	for _, name := range w.names("app", w.AppServices) {
		w.create(ctx, "AppService/"+name, testutil.MakeAppService(name, w.Namespace, "registry.example/app:v1").Obj())
	}
	for _, name := range w.names("vm", w.VMs) {
		w.create(ctx, "VirtualMachine/"+name, &cloudv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace},
			Spec: cloudv1.VirtualMachineSpec{Resource: cloudv1.VirtualMachineResource{
				CPU: resource.MustParse("1"), Memory: resource.MustParse("64Mi"),
			}},
		})
	}
	w.advancePlaybooks(ctx)
	w.advanceAppServices(ctx)
	w.advanceVMs(ctx)
}

// advancePlaybooks reads every Playbook whose notes are ready to 100; its
// controller then deletes it. It checks on the way that no Playbook has
// more than one notes ConfigMap and that none vanished before it was read.
func (w *Workload) advancePlaybooks(ctx context.Context) {
	var pbs opsv1.PlaybookList
	if w.failed(w.c.List(ctx, &pbs, client.InNamespace(w.Namespace))) {
		return
	}
	var cms corev1.ConfigMapList
	if w.failed(w.c.List(ctx, &cms, client.InNamespace(w.Namespace))) {
		return
	}
	owners := map[types.UID][]string{}
	for _, cm := range cms.Items {
		for _, ref := range cm.OwnerReferences {
			if ref.Kind == "Playbook" {
				owners[ref.UID] = append(owners[ref.UID], cm.Name)
			}
		}
	}
	present := map[string]bool{}
	for i := range pbs.Items {
		pb := &pbs.Items[i]
		present[pb.Name] = true
		if n := len(owners[pb.UID]); n > 1 {
			w.problem("Playbook %s owns %d notes ConfigMaps: %v", pb.Name, n, owners[pb.UID])
		}
		ready := meta.IsStatusConditionTrue(pb.Status.Conditions, opsv1.ConditionReady)
		if !ready || pb.Status.Progress >= opsv1.ProgressComplete || !pb.DeletionTimestamp.IsZero() {
			continue
		}
		patch := client.MergeFrom(pb.DeepCopy())
		pb.Status.Progress = opsv1.ProgressComplete
		w.advance("Playbook/"+pb.Name, w.c.Status().Patch(ctx, pb, patch))
	}
	for _, name := range w.names("pb", w.Playbooks) {
		key := "Playbook/" + name
		if w.has(w.created, key) && !w.has(w.advanced, key) && !w.has(w.unsure, key) && !present[name] {
			w.problem("Playbook %s was created and is gone before it was read to 100: lost", name)
		}
	}
}

// advanceAppServices scales every AppService whose Deployment exists to 2.
func (w *Workload) advanceAppServices(ctx context.Context) {
	for _, name := range w.names("app", w.AppServices) {
		key := "AppService/" + name
		if !w.has(w.created, key) || w.has(w.advanced, key) {
			continue
		}
		app := &appv1.AppService{}
		if err := w.c.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: name}, app); err != nil {
			if apierrors.IsNotFound(err) {
				w.problem("AppService %s was created and is gone: lost", name)
			}
			w.failed(err)
			continue
		}
		if !meta.IsStatusConditionTrue(app.Status.Conditions, controller.ConditionReconciled) {
			continue
		}
		patch := client.MergeFrom(app.DeepCopy())
		app.Spec.Size = ptr.To[int32](2)
		if !w.failed(w.c.Patch(ctx, app, patch)) {
			w.mark(w.advanced, key)
		}
	}
}

// advanceVMs deletes every VirtualMachine that went Active; its
// controller removes the server and then the finalizer.
func (w *Workload) advanceVMs(ctx context.Context) {
	if w.VMs == 0 {
		return
	}
	var vms cloudv1.VirtualMachineList
	if w.failed(w.c.List(ctx, &vms, client.InNamespace(w.Namespace))) {
		return
	}
	present := map[string]bool{}
	for i := range vms.Items {
		vm := &vms.Items[i]
		present[vm.Name] = true
		if vm.Status.Phase != cloudv1.VirtualMachineActive || !vm.DeletionTimestamp.IsZero() {
			continue
		}
		err := w.c.Delete(ctx, vm)
		if apierrors.IsNotFound(err) {
			err = nil
		}
		w.advance("VirtualMachine/"+vm.Name, err)
	}
	for _, name := range w.names("vm", w.VMs) {
		key := "VirtualMachine/" + name
		if w.has(w.created, key) && !w.has(w.advanced, key) && !w.has(w.unsure, key) && !present[name] {
			w.problem("VirtualMachine %s was created and is gone before it was deleted: lost", name)
		}
	}
}

// Done returns nil once every object arrived: all created; Playbooks read,
// deleted, their notes gone; AppServices at 2 with exactly one Deployment
// of 2 replicas and one Service each, both controlled by it; VirtualMachines
// deleted, finalizers and all. Otherwise it says what is missing.
func (w *Workload) Done(ctx context.Context) error {
	var missing []string
	w.mu.Lock()
	total := w.Playbooks + w.AppServices + w.VMs
	if n := len(w.created); n < total {
		missing = append(missing, fmt.Sprintf("%d of %d objects created", n, total))
	}
	w.mu.Unlock()

	var pbs opsv1.PlaybookList
	if err := w.checker().List(ctx, &pbs, client.InNamespace(w.Namespace)); err != nil {
		return err
	}
	if n := len(pbs.Items); n > 0 {
		missing = append(missing, fmt.Sprintf("%d Playbooks left (first: %s, progress %d, finalizers %v)",
			n, pbs.Items[0].Name, pbs.Items[0].Status.Progress, pbs.Items[0].Finalizers))
	}
	var cms corev1.ConfigMapList
	if err := w.checker().List(ctx, &cms, client.InNamespace(w.Namespace)); err != nil {
		return err
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "pb-") {
			missing = append(missing, "notes ConfigMap "+cm.Name+" left")
		}
	}

	var apps appv1.AppServiceList
	if err := w.checker().List(ctx, &apps, client.InNamespace(w.Namespace)); err != nil {
		return err
	}
	var deploys appsv1.DeploymentList
	if err := w.checker().List(ctx, &deploys, client.InNamespace(w.Namespace)); err != nil {
		return err
	}
	var svcs corev1.ServiceList
	if err := w.checker().List(ctx, &svcs, client.InNamespace(w.Namespace)); err != nil {
		return err
	}
	for _, app := range apps.Items {
		if ptr.Deref(app.Spec.Size, 0) != 2 {
			missing = append(missing, "AppService "+app.Name+" not scaled yet")
			continue
		}
		if n := controlledBy(deploys.Items, app.UID); n != 1 {
			missing = append(missing, fmt.Sprintf("AppService %s controls %d Deployments", app.Name, n))
		}
		if n := controlledBy(svcs.Items, app.UID); n != 1 {
			missing = append(missing, fmt.Sprintf("AppService %s controls %d Services", app.Name, n))
		}
		for _, d := range deploys.Items {
			if metav1.IsControlledBy(&d, &app) && ptr.Deref(d.Spec.Replicas, 0) != 2 {
				missing = append(missing, fmt.Sprintf("Deployment %s at %d replicas, not 2", d.Name, ptr.Deref(d.Spec.Replicas, 0)))
			}
		}
	}
	if len(apps.Items) < w.AppServices {
		missing = append(missing, fmt.Sprintf("%d of %d AppServices exist", len(apps.Items), w.AppServices))
	}

	if w.VMs > 0 {
		var vms cloudv1.VirtualMachineList
		if err := w.checker().List(ctx, &vms, client.InNamespace(w.Namespace)); err != nil {
			return err
		}
		if n := len(vms.Items); n > 0 {
			missing = append(missing, fmt.Sprintf("%d VirtualMachines left (first: %s, phase %s, finalizers %v)",
				n, vms.Items[0].Name, vms.Items[0].Status.Phase, vms.Items[0].Finalizers))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		if len(missing) > 8 {
			missing = append(missing[:8], fmt.Sprintf("and %d more", len(missing)-8))
		}
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}

// controlledBy counts the objects among items whose controller is uid.
func controlledBy[T any, PT interface {
	*T
	metav1.Object
}](items []T, uid types.UID) int {
	n := 0
	for i := range items {
		if ref := metav1.GetControllerOf(PT(&items[i])); ref != nil && ref.UID == uid {
			n++
		}
	}
	return n
}

// Problems are the invariants the workload saw broken on the way: a child
// doubled, an object lost.
func (w *Workload) Problems() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.problems...)
}

// Created counts the objects whose create succeeded.
func (w *Workload) Created() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.created)
}

// Advanced counts the objects moved on to their next step: Playbooks read
// to 100 (their deletion follows), AppServices scaled, VirtualMachines
// deleted.
func (w *Workload) Advanced() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.advanced)
}

// FailedWrites counts the workload's requests that failed and were retried.
func (w *Workload) FailedWrites() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeErrs
}
