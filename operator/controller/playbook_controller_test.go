package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	. "github.com/kubeharness/kubeharness/internal/testutil"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// TestFinalizerPatchKeepsOthersFinalizers: the controller works from a read
// that is already stale, another controller having added its own finalizer
// since. A merge patch replaces the whole finalizers list, so without an
// optimistic lock the controller's patch would drop the other finalizer; with
// it the patch conflicts and the Playbook is reconciled again from a fresh
// read.
func TestFinalizerPatchKeepsOthersFinalizers(t *testing.T) {
	const other = "backup.example.com/snapshot"
	for _, tc := range []struct {
		name     string
		deleting bool
	}{
		{name: "adding ours"},
		{name: "removing ours", deleting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := testScheme(t)
			pb := MakePlaybook("book", "ns").Abstract("notes").Obj()
			if tc.deleting {
				pb.Finalizers = []string{opsv1.CleanupFinalizer}
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pb).WithStatusSubresource(pb).Build()
			key := types.NamespacedName{Namespace: "ns", Name: "book"}
			if tc.deleting {
				if err := c.Delete(context.Background(), pb); err != nil {
					t.Fatal(err)
				}
			}
			stale := &opsv1.Playbook{}
			if err := c.Get(context.Background(), key, stale); err != nil {
				t.Fatal(err)
			}
			// Another controller adds its finalizer after our read.
			fresh := stale.DeepCopy()
			fresh.Finalizers = append(fresh.Finalizers, other)
			if err := c.Update(context.Background(), fresh); err != nil {
				t.Fatal(err)
			}
			staleReads := interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if p, ok := obj.(*opsv1.Playbook); ok && k == key {
					stale.DeepCopyInto(p)
					return nil
				}
				return cl.Get(ctx, k, obj, opts...)
			}}
			r := &PlaybookReconciler{Client: interceptor.NewClient(c, staleReads), Recorder: events.NewFakeRecorder(10)}
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			if !apierrors.IsConflict(err) {
				t.Errorf("reconciling from a stale read: err = %v, want a conflict", err)
			}
			got := &opsv1.Playbook{}
			if err := c.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range got.Finalizers {
				found = found || f == other
			}
			if !found {
				t.Errorf("finalizers %v: the other controller's %s was dropped", got.Finalizers, other)
			}
		})
	}
}

// playbookEnv is a Playbook reconciler over a fake API holding objs.
func playbookEnv(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*PlaybookReconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&opsv1.Playbook{}).WithInterceptorFuncs(funcs).Build()
	rec := events.NewFakeRecorder(10)
	return &PlaybookReconciler{Client: c, Recorder: rec}, c, rec
}

func reconcileBook(t *testing.T, r *PlaybookReconciler) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "book"}}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

func TestPlaybookFinalizerThenControlledNotes(t *testing.T) {
	r, c, _ := playbookEnv(t, interceptor.Funcs{}, MakePlaybook("book", "ns").Abstract("Failover").Obj())
	reconcileBook(t, r)
	pb := &opsv1.Playbook{}
	key := types.NamespacedName{Namespace: "ns", Name: "book"}
	if err := c.Get(context.Background(), key, pb); err != nil {
		t.Fatal(err)
	}
	if len(pb.Finalizers) != 1 || pb.Finalizers[0] != opsv1.CleanupFinalizer {
		t.Fatalf("finalizers after the first reconcile: %v", pb.Finalizers)
	}
	reconcileBook(t, r)
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "book" + opsv1.NotesSuffix}, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), key, pb); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(cm, pb) || cm.Data[NotesKeyAbstract] != "Failover" {
		t.Errorf("notes ConfigMap: owners %+v, data %v", cm.OwnerReferences, cm.Data)
	}
	if !meta.IsStatusConditionTrue(pb.Status.Conditions, opsv1.ConditionReady) {
		t.Errorf("Ready is not True: %+v", pb.Status.Conditions)
	}
}

func TestPlaybookLeavesAForeignNotesConfigMapAlone(t *testing.T) {
	pb := MakePlaybook("book", "ns").Abstract("mine").Obj()
	pb.Finalizers = []string{opsv1.CleanupFinalizer}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "book" + opsv1.NotesSuffix, Namespace: "ns"}, Data: map[string]string{"abstract": "theirs"}}
	r, c, rec := playbookEnv(t, interceptor.Funcs{}, pb, foreign)
	reconcileBook(t, r)
	reconcileBook(t, r) // a second pass must not record the conflict again
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(foreign), cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.OwnerReferences) > 0 || cm.Data["abstract"] != "theirs" {
		t.Errorf("the foreign ConfigMap was changed: %+v", cm)
	}
	got := &opsv1.Playbook{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pb), got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, opsv1.ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonOwnershipConflict {
		t.Errorf("Ready condition = %+v", cond)
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d events recorded over two reconciles, want the conflict once", n)
	}

	step := "deleting the Playbook"
	if err := c.Delete(context.Background(), got); err != nil {
		t.Fatal(step, err)
	}
	reconcileBook(t, r)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pb), &opsv1.Playbook{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: the Playbook is still there (%v)", step, err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(foreign), cm); err != nil {
		t.Errorf("%s: the foreign ConfigMap went with it: %v", step, err)
	}
}

func TestPlaybookFinishedIsDeletedUnlessDenied(t *testing.T) {
	finished := func() *opsv1.Playbook {
		pb := MakePlaybook("book", "ns").Abstract("done").Progress(100).Obj()
		pb.Finalizers = []string{opsv1.CleanupFinalizer}
		return pb
	}
	t.Run("deleted with a Finished event", func(t *testing.T) {
		r, c, rec := playbookEnv(t, interceptor.Funcs{}, finished())
		reconcileBook(t, r)
		pb := &opsv1.Playbook{}
		err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "book"}, pb)
		if err == nil && pb.DeletionTimestamp.IsZero() {
			t.Error("a finished Playbook was not deleted")
		}
		if e := <-rec.Events; !strings.Contains(e, "Normal "+ReasonFinished) {
			t.Errorf("event %q, want %s", e, ReasonFinished)
		}
	})
	t.Run("denied: reported once, not retried for the same generation", func(t *testing.T) {
		deletes := 0
		deny := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*opsv1.Playbook); ok {
				deletes++
				// As the API server returns the webhook's denial.
				return apierrors.NewForbidden(schema.GroupResource{Group: opsv1.GroupVersion.Group, Resource: "playbooks"}, obj.GetName(),
					errors.New(`admission webhook "vplaybook-v1.kb.io" denied the request: spec.deletionProtection is true`))
			}
			return c.Delete(ctx, obj, opts...)
		}}
		r, c, _ := playbookEnv(t, deny, finished())
		reconcileBook(t, r)
		reconcileBook(t, r)
		if deletes != 1 {
			t.Errorf("%d deletes tried over two reconciles of one generation, want 1", deletes)
		}
		pb := &opsv1.Playbook{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "book"}, pb); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionFinished)
		if cond == nil || cond.Reason != ReasonDeletionDenied || !strings.Contains(cond.Message, "deletionProtection") {
			t.Errorf("Finished condition = %+v", cond)
		}
	})
	// An API server that has just restarted answers 403 to the manager's
	// own requests until its RBAC caches fill; a role fixed later lets the
	// deletion through too. Neither is a denial to remember.
	t.Run("forbidden by RBAC: retried until the delete goes through", func(t *testing.T) {
		forbidden := true
		rbac := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*opsv1.Playbook); ok && forbidden {
				return apierrors.NewForbidden(schema.GroupResource{Group: opsv1.GroupVersion.Group, Resource: "playbooks"}, obj.GetName(),
					errors.New(`User "system:serviceaccount:kubeharness-system:kubeharness-manager" cannot delete resource "playbooks" in API group "ops.kubeharness.dev" in the namespace "ns"`))
			}
			return c.Delete(ctx, obj, opts...)
		}}
		r, c, _ := playbookEnv(t, rbac, finished())
		key := types.NamespacedName{Namespace: "ns", Name: "book"}
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); !apierrors.IsForbidden(err) {
			t.Fatalf("reconcile while RBAC forbids the delete: %v, want the 403 back so that it is retried", err)
		}
		pb := &opsv1.Playbook{}
		if err := c.Get(context.Background(), key, pb); err != nil {
			t.Fatal(err)
		}
		if cond := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionFinished); cond != nil && cond.Reason == ReasonDeletionDenied {
			t.Errorf("a 403 of RBAC was recorded as a denial: %+v", cond)
		}
		forbidden = false
		reconcileBook(t, r)
		err := c.Get(context.Background(), key, pb)
		if err == nil && pb.DeletionTimestamp.IsZero() {
			t.Error("the finished Playbook was not deleted once RBAC allowed it")
		}
	})
}

func TestDeniedByAdmission(t *testing.T) {
	gr := schema.GroupResource{Group: opsv1.GroupVersion.Group, Resource: "playbooks"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a validating webhook's denial", apierrors.NewForbidden(gr, "book", errors.New(`admission webhook "vplaybook-v1.kb.io" denied the request: spec.deletionProtection is true`)), true},
		{"a ValidatingAdmissionPolicy's denial", apierrors.NewForbidden(gr, "book", errors.New(`ValidatingAdmissionPolicy 'keep' with binding 'keep' denied request: kept`)), true},
		{"an invalid object", apierrors.NewInvalid(opsv1.GroupVersion.WithKind("Playbook").GroupKind(), "book", nil), true},
		{"RBAC", apierrors.NewForbidden(gr, "book", errors.New(`User "system:serviceaccount:kubeharness-system:kubeharness-manager" cannot delete resource "playbooks"`)), false},
		{"a conflict", apierrors.NewConflict(gr, "book", errors.New("modified")), false},
		{"a server error", apierrors.NewInternalError(errors.New("etcd")), false},
	} {
		if got := deniedByAdmission(tc.err); got != tc.want {
			t.Errorf("%s: deniedByAdmission = %v, want %v", tc.name, got, tc.want)
		}
	}
}
