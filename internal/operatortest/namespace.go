package operatortest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SpecLabel marks namespaces the harness created for a spec.
const SpecLabel = "kubeharness.dev/e2e-spec"

// CreateNamespace creates a namespace of its own for one spec, with the
// extra labels given.
func CreateNamespace(ctx context.Context, c client.Client, prefix string, labels ...map[string]string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix + "-",
		Labels:       map[string]string{SpecLabel: "true"},
	}}
	for _, l := range labels {
		for k, v := range l {
			ns.Labels[k] = v
		}
	}
	if err := c.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating spec namespace: %w", err)
	}
	return ns.Name, nil
}

// DeleteNamespace deletes a spec namespace. Where no namespace controller
// runs (envtest), it stays Terminating; its objects stay readable.
func DeleteNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return client.IgnoreNotFound(c.Delete(ctx, ns))
}
