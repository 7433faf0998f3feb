package controller

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if err := opsv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
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
			r := &PlaybookReconciler{Client: interceptor.NewClient(c.(client.WithWatch), staleReads), Recorder: events.NewFakeRecorder(10)}
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
