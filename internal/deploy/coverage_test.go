package deploy

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// The coverage claim's directory is found on the node its volume is bound
// to, as local-path provisions it.
func TestClaimDirectory(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: certs.DefaultNamespace, Name: CoverageClaim},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-1"},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/local-path-provisioner/pvc-1"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"kind-worker2"}}},
			}}}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(pvc, pv).Build()
	node, path, err := claimDirectory(context.Background(), c)
	if err != nil || node != "kind-worker2" || path != "/var/local-path-provisioner/pvc-1" {
		t.Fatalf("claimDirectory = %q, %q, %v; want kind-worker2, /var/local-path-provisioner/pvc-1", node, path, err)
	}

	pvc.Spec.VolumeName = ""
	c = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(pvc).Build()
	if _, _, err := claimDirectory(context.Background(), c); err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Fatalf("an unbound claim: %v, want an error saying it is not bound", err)
	}
}

// The coverage overlay is config/default plus the claim and the manager's
// GOCOVERDIR on it, and keeps the restricted Pod Security Standard.
func TestCoverageConfig(t *testing.T) {
	objs, err := Render("../..", CoverageConfig)
	if err != nil {
		t.Fatal(err)
	}
	base, err := Render("../..", DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(base)+1 {
		t.Errorf("%s renders %d objects, want %s's %d and the claim", CoverageConfig, len(objs), DefaultConfig, len(base))
	}
	var claim, goCoverDir, restricted bool
	for _, u := range objs {
		switch u.GetKind() {
		case "PersistentVolumeClaim":
			claim = u.GetName() == CoverageClaim && u.GetNamespace() == certs.DefaultNamespace
		case "Namespace":
			restricted = u.GetLabels()["pod-security.kubernetes.io/enforce"] == "restricted"
		case "Deployment":
			d := &struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}{}
			if err := FromUnstructured(u, d); err != nil {
				t.Fatal(err)
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.HostPath != nil {
					t.Errorf("volume %s is a hostPath", v.Name)
				}
			}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				goCoverDir = goCoverDir || e.Name == "GOCOVERDIR" && e.Value == "/coverage/$(POD_NAME)"
			}
		}
	}
	if !claim || !goCoverDir || !restricted {
		t.Errorf("%s: claim %v, GOCOVERDIR on it %v, namespace restricted %v; want all", CoverageConfig, claim, goCoverDir, restricted)
	}
}
