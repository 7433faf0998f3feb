// Package consumer is a stand-in for any operator project's envtest suite:
// it knows nothing of kubeharness and finds its binaries through
// KUBEBUILDER_ASSETS alone. hack/envtest-consumer/run.sh copies it into a
// module of its own outside the repository.
package consumer

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestConfigMapRoundTrip(t *testing.T) {
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer", Namespace: "default"},
		Data:       map[string]string{"greeting": "hello"},
	}
	if err := c.Create(ctx, want); err != nil {
		t.Fatalf("creating the ConfigMap: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatalf("reading the ConfigMap back: %v", err)
	}
	if got.Data["greeting"] != "hello" {
		t.Fatalf("read back %v, want greeting=hello", got.Data)
	}
	t.Logf("ConfigMap round trip on the binaries in %s", os.Getenv("KUBEBUILDER_ASSETS"))
}
