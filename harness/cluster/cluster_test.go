package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// TestEnvtestAndExisting starts an Envtest provider and proves, through its
// API server, that it installed the CRDs and marked the cluster
// disposable; that Existing connects to it only while it is marked; and
// that the Envtest provider restarts its API server.
func TestEnvtestAndExisting(t *testing.T) {
	ctx := context.Background()
	bins, _ := testbins.Need(t)
	env := &cluster.Envtest{
		Options:           controlplane.Options{BinaryDir: bins},
		CRDDirectoryPaths: []string{filepath.Join("testdata", "widgets.yaml")},
		MarkedBy:          "cluster_test's Envtest",
	}
	var p cluster.Provider = env
	if _, ok := p.(cluster.ImageLoader); ok {
		t.Error("an envtest control plane has no nodes to load images into, yet claims to be an ImageLoader")
	}
	c, err := p.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	if c.Provider != "envtest" || c.Version == nil || c.Version.GitVersion == "" {
		t.Errorf("cluster %q version %+v: want envtest and the API server's version", c.Provider, c.Version)
	}
	if _, err := c.Clientset.Discovery().ServerResourcesForGroupVersion("example.com/v1"); err != nil {
		t.Errorf("the Widget CRD is not served: %v", err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := env.Running().KubeConfig(rest.ImpersonationConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	existing := &cluster.Existing{Kubeconfig: kubeconfig}
	got, err := existing.Start(ctx)
	if err != nil {
		t.Fatalf("Existing refused a cluster Envtest marked disposable: %v", err)
	}
	if got.Config.Host != c.Config.Host {
		t.Errorf("Existing connected to %s, want %s", got.Config.Host, c.Config.Host)
	}

	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: cluster.DisposableMarker}}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(marker), marker); err != nil || marker.Data["createdBy"] != env.MarkedBy {
		t.Errorf("the disposable marker names %q as the cluster's maker (%v), want MarkedBy, %q", marker.Data["createdBy"], err, env.MarkedBy)
	}
	if err := c.Client.Delete(ctx, marker); err != nil {
		t.Fatal(err)
	}
	if _, err := existing.Start(ctx); err == nil || !strings.Contains(err.Error(), "kubectl -n kube-system create configmap "+cluster.DisposableMarker) {
		t.Errorf("Existing on an unmarked cluster: got %v, want a refusal that says how to mark it", err)
	}
	if err := cluster.MarkDisposable(ctx, c.Client, "cluster_test"); err != nil {
		t.Fatal(err)
	}
	if _, err := existing.Start(ctx); err != nil {
		t.Errorf("Existing after MarkDisposable: %v", err)
	}

	if err := env.Running().Exited(); err != nil {
		t.Errorf("Exited with every process running: %v", err)
	}
	if err := env.Kill(controlplane.APIServer); err != nil {
		t.Fatal(err)
	}
	if err := env.Running().Exited(); err == nil || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("Exited after the API server was killed: got %v, want it named", err)
	}
	if err := env.Restart(ctx, controlplane.APIServer); err != nil {
		t.Fatal(err)
	}
	if err := env.Running().Exited(); err != nil {
		t.Errorf("Exited after the restart: %v", err)
	}
	if _, err := c.Clientset.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); err != nil {
		t.Errorf("the API server does not answer after Restart: %v", err)
	}
}

func TestExistingSaysWhichKubeconfigFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	_, err := (&cluster.Existing{Kubeconfig: path}).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want an error naming %s", err, path)
	}
}

type kindNodes struct{ Name string }

type restarter interface{ Restart() error }

type restarts struct{}

func (restarts) Restart() error { return nil }

// Ability finds an ability by its type, a struct or an interface, and
// says when the cluster offers none.
func TestAbilityFindsByType(t *testing.T) {
	c := &cluster.Cluster{Abilities: []any{kindNodes{Name: "dev"}, restarts{}}}
	if k, ok := cluster.Ability[kindNodes](c); !ok || k.Name != "dev" {
		t.Errorf("cluster.Ability[kindNodes] = %v, %v; want dev", k, ok)
	}
	if _, ok := cluster.Ability[restarter](c); !ok {
		t.Error("cluster.Ability[restarter]: not found; want the value that implements it")
	}
	if _, ok := cluster.Ability[kindNodes](&cluster.Cluster{}); ok {
		t.Error("Ability of a cluster without abilities: found one")
	}
	if _, ok := cluster.Ability[kindNodes](nil); ok {
		t.Error("Ability of nil: found one")
	}
}
