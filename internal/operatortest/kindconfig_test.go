package operatortest

import (
	"os"
	"path/filepath"
	"testing"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// TestKindConfig checks that kind-config.yaml decodes strictly into kind's
// own v1alpha4 types and describes a multi-node cluster.
func TestKindConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "kind-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg kindv1alpha4.Cluster
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatalf("kind-config.yaml is not a valid kind v1alpha4 Cluster: %v", err)
	}
	if cfg.Kind != "Cluster" || cfg.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Fatalf("kind %q apiVersion %q, want Cluster kind.x-k8s.io/v1alpha4", cfg.Kind, cfg.APIVersion)
	}
	roles := map[kindv1alpha4.NodeRole]int{}
	for _, n := range cfg.Nodes {
		roles[n.Role]++
	}
	if roles[kindv1alpha4.ControlPlaneRole] < 1 || roles[kindv1alpha4.WorkerRole] < 1 {
		t.Fatalf("want a multi-node cluster with a control plane and workers, got roles %v", roles)
	}
	if cfg.Name != "kubeharness" {
		t.Errorf("cluster name %q, want kubeharness", cfg.Name)
	}
}
