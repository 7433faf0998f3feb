package testenv

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ExistingProvider runs the suite on the cluster of the current kubeconfig
// context ($KUBECONFIG, --context through $KUBECONTEXT), where kubeharness
// is already deployed (make kind-up, make deploy). It refuses a cluster
// that does not carry the disposable marker: the suite creates and deletes
// namespaces, nodes' statuses and CSRs, and must never run against a
// cluster someone depends on.
type ExistingProvider struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config.
	Kubeconfig string
	stop       context.CancelFunc
}

var _ Provider = &ExistingProvider{}

// Name implements Provider.
func (*ExistingProvider) Name() string { return "existing" }

// Start implements Provider.
func (p *ExistingProvider) Start(ctx context.Context) (*Cluster, error) {
	cfg, where, err := LoadKubeconfig(p.Kubeconfig, os.Getenv("KUBECONTEXT"))
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	if err := CheckDisposable(ctx, c); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	cl, stop, err := connectDeployed(ctx, p.Name(), cfg)
	p.stop = stop
	return cl, err
}

// Stop implements Provider: the cluster is not the suite's to remove.
func (p *ExistingProvider) Stop(context.Context) error {
	if p.stop != nil {
		p.stop()
	}
	return nil
}

// MarkDisposable leaves the disposable marker in a cluster made to be
// thrown away.
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

// CheckDisposable fails unless the cluster carries the disposable marker.
func CheckDisposable(ctx context.Context, c client.Client) error {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: DisposableMarker}, cm)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("refusing to run: the cluster has no ConfigMap kube-system/%s, the marker of a disposable cluster that `make kind-up` and `make envtest-up` set. "+
			"The suite creates and deletes objects cluster-wide; if this cluster really is yours to break, mark it with "+
			"`kubectl -n kube-system create configmap %s --from-literal=createdBy=me`", DisposableMarker, DisposableMarker)
	}
	if err != nil {
		return fmt.Errorf("reading the disposable marker: %w", err)
	}
	return nil
}
