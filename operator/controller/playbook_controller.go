package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// Event reasons recorded on Playbooks.
const (
	// ReasonFinished: status.progress reached 100 and the Playbook is deleted.
	ReasonFinished = "Finished"
	// ReasonDeletionDenied: the Playbook is finished but protected, so the
	// controller could not delete it.
	ReasonDeletionDenied = "DeletionDenied"
	// ReasonNotesReady: the notes ConfigMap exists and is up to date.
	ReasonNotesReady = "NotesReady"
	// ReasonInProgress: the Playbook is still being read.
	ReasonInProgress = "InProgress"

	// NotesKeyAbstract is the key of the abstract in the notes ConfigMap.
	NotesKeyAbstract = "abstract"
)

// PlaybookReconciler keeps a Playbook's notes ConfigMap and removes a
// Playbook once it has been read to the end.
type PlaybookReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Workers is how many Playbooks are reconciled at once; 0 means 1.
	Workers int
}

// +kubebuilder:rbac:groups=ops.kubeharness.dev,resources=playbooks,verbs=list;watch;patch;delete
// +kubebuilder:rbac:groups=ops.kubeharness.dev,resources=playbooks/status,verbs=patch
// +kubebuilder:rbac:groups=ops.kubeharness.dev,resources=playbooks/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Playbook to its desired state.
func (r *PlaybookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pb := &opsv1.Playbook{}
	if err := r.Get(ctx, req.NamespacedName, pb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, pb)
	}
	if !controllerutil.ContainsFinalizer(pb, opsv1.CleanupFinalizer) {
		// The optimistic lock makes the patch carry resourceVersion: a merge
		// patch replaces the whole finalizers list, so without it a
		// finalizer another controller added meanwhile would be dropped.
		patch := client.MergeFromWithOptions(pb.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(pb, opsv1.CleanupFinalizer)
		if err := r.Patch(ctx, pb, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to Playbook %s: %w", req.NamespacedName, err)
		}
		// The update event brings the Playbook back with the finalizer in place.
		return ctrl.Result{}, nil
	}

	before := pb.DeepCopy()
	err := r.reconcileNotes(ctx, pb)
	if notOwned, ok := IsNotOwned(err); ok {
		// Someone else's ConfigMap has the notes' name: never adopt or
		// overwrite it. Say so once, when the condition turns.
		if c := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionReady); c == nil || c.Reason != ReasonOwnershipConflict {
			r.Recorder.Eventf(pb, nil, corev1.EventTypeWarning, ReasonOwnershipConflict, "CreateNotes", "%s", notOwned.Error())
		}
		meta.SetStatusCondition(&pb.Status.Conditions, metav1.Condition{
			Type: opsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonOwnershipConflict,
			Message: notOwned.Error(), ObservedGeneration: pb.Generation,
		})
	} else if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace's deletion removes this Playbook too, and that
			// brings it back here through the deletion branch.
			ctrl.LoggerFrom(ctx).V(4).Info("namespace is terminating; not creating notes", "playbook", klog.KObj(pb))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	} else {
		meta.SetStatusCondition(&pb.Status.Conditions, metav1.Condition{
			Type: opsv1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonNotesReady,
			Message: fmt.Sprintf("ConfigMap %s holds the notes", pb.NotesConfigMapName()), ObservedGeneration: pb.Generation,
		})
	}

	if pb.Status.Progress >= opsv1.ProgressComplete {
		deleted, err := r.finish(ctx, pb)
		if err != nil || deleted {
			return ctrl.Result{}, err
		}
	} else {
		meta.SetStatusCondition(&pb.Status.Conditions, metav1.Condition{
			Type: opsv1.ConditionFinished, Status: metav1.ConditionFalse, Reason: ReasonInProgress,
			Message: fmt.Sprintf("%d%% read", pb.Status.Progress), ObservedGeneration: pb.Generation,
		})
	}
	return ctrl.Result{}, r.patchStatus(ctx, before, pb)
}

// finish deletes a Playbook that has been read to the end. It reports
// whether the Playbook is going away. A delete an admission webhook or
// policy denied is recorded in the Finished condition and not retried
// until the spec changes: it would be denied again, and retrying would only
// hot-loop. Any other failure, a 403 of RBAC among them, is retried.
func (r *PlaybookReconciler) finish(ctx context.Context, pb *opsv1.Playbook) (bool, error) {
	log := ctrl.LoggerFrom(ctx)
	if c := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionFinished); c != nil &&
		c.Reason == ReasonDeletionDenied && c.ObservedGeneration == pb.Generation {
		log.V(4).Info("deletion was denied for this generation; waiting for a spec change", "playbook", klog.KObj(pb))
		return false, nil
	}

	err := r.Delete(ctx, pb, client.Preconditions{UID: &pb.UID})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		r.Recorder.Eventf(pb, nil, corev1.EventTypeNormal, ReasonFinished, "Delete",
			"Playbook read to %d%%; deleting it", pb.Status.Progress)
		log.Info("finished Playbook deleted", "playbook", klog.KObj(pb))
		return true, nil
	case deniedByAdmission(err):
		r.Recorder.Eventf(pb, nil, corev1.EventTypeWarning, ReasonDeletionDenied, "Delete",
			"Playbook is finished but could not be deleted: %v", err)
		meta.SetStatusCondition(&pb.Status.Conditions, metav1.Condition{
			Type: opsv1.ConditionFinished, Status: metav1.ConditionFalse, Reason: ReasonDeletionDenied,
			Message:            fmt.Sprintf("Playbook is finished but its deletion was denied: %v", err),
			ObservedGeneration: pb.Generation,
		})
		return false, nil
	default:
		return false, fmt.Errorf("deleting finished Playbook %s: %w", klog.KObj(pb), err)
	}
}

// deniedByAdmission reports whether err is an admission plugin's refusal
// (a validating webhook such as the Playbook's delete validation, or a
// ValidatingAdmissionPolicy), which holds until the object changes. A 403
// of the manager's own authorization does not: an API server that has just
// restarted answers one until its RBAC caches fill, and a role fixed later
// must let the deletion through, so that one is retried with backoff.
func deniedByAdmission(err error) bool {
	if apierrors.IsInvalid(err) {
		return true
	}
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "admission webhook ") && strings.Contains(msg, " denied the request") ||
		strings.Contains(msg, "ValidatingAdmissionPolicy ") && strings.Contains(msg, " denied request")
}

func (r *PlaybookReconciler) reconcileNotes(ctx context.Context, pb *opsv1.Playbook) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: pb.NotesConfigMapName(), Namespace: pb.Namespace}}
	_, err := controlledCreateOrUpdate(ctx, r.Client, r.Scheme(), pb, cm, "ConfigMap", func() error {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[NotesKeyAbstract] = pb.Spec.Abstract
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconciling ConfigMap %s: %w", types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}, err)
	}
	return nil
}

// finalize removes the notes ConfigMap, then the finalizer. It does not rely
// on the garbage collector, which envtest does not run.
func (r *PlaybookReconciler) finalize(ctx context.Context, pb *opsv1.Playbook) error {
	if !controllerutil.ContainsFinalizer(pb, opsv1.CleanupFinalizer) {
		return nil
	}
	key := types.NamespacedName{Namespace: pb.Namespace, Name: pb.NotesConfigMapName()}
	cm := &corev1.ConfigMap{}
	switch err := r.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("getting ConfigMap %s: %w", key, err)
	case metav1.IsControlledBy(cm, pb):
		if err := r.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ConfigMap %s: %w", key, err)
		}
	}
	patch := client.MergeFromWithOptions(pb.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(pb, opsv1.CleanupFinalizer)
	if err := r.Patch(ctx, pb, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer from Playbook %s: %w", klog.KObj(pb), err)
	}
	return nil
}

func (r *PlaybookReconciler) patchStatus(ctx context.Context, before, pb *opsv1.Playbook) error {
	if equality.Semantic.DeepEqual(before.Status, pb.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, pb, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching status of Playbook %s: %w", klog.KObj(pb), err)
	}
	return nil
}

// SetupWithManager registers the controller with the manager.
func (r *PlaybookReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&opsv1.Playbook{}).
		// Every ConfigMap named like notes, owned or not: a Playbook blocked
		// by someone else's ConfigMap hears when it goes away.
		Watches(&corev1.ConfigMap{}, byName(func(cm string) string {
			name, ok := strings.CutSuffix(cm, opsv1.NotesSuffix)
			if !ok || name == "" {
				return ""
			}
			return name
		})).
		Named("playbook").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Complete(r)
}
