package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DisposableMarker is the ConfigMap in kube-system that marks a cluster
// made to be thrown away: a suite may break it.
const DisposableMarker = "kubeharness-disposable"

// MarkDisposable leaves the disposable marker in a cluster made to be
// thrown away, saying who made it.
func MarkDisposable(ctx context.Context, c client.Client, by string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DisposableMarker, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{"createdBy": by},
	}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("marking the cluster disposable: %w", err)
	}
	return nil
}

// CheckDisposable fails, saying how to mark it, unless the cluster carries
// the disposable marker.
func CheckDisposable(ctx context.Context, c client.Client) error {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: DisposableMarker}, cm)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("refusing to run: the cluster has no ConfigMap kube-system/%s, the marker of a disposable cluster that the harness leaves in the clusters it makes. "+
			"The suite creates and deletes objects cluster-wide; if this cluster really is yours to break, mark it with "+
			"`kubectl -n kube-system create configmap %s --from-literal=createdBy=me`", DisposableMarker, DisposableMarker)
	}
	if err != nil {
		return fmt.Errorf("reading the disposable marker: %w", err)
	}
	return nil
}
