package controlplane

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestStartWithRelativeDirectories: etcd and kube-apiserver run in the
// plane's own directory, so a relative TemplateDir or Dir must still name
// what the caller meant. A relative TemplateDir once had etcd write the
// template's data below the plane's directory and keep an empty template,
// from which the next start served without RBAC's bootstrap roles.
func TestStartWithRelativeDirectories(t *testing.T) {
	// Binaries of the test's own: none has a template beside it yet.
	dir := linkedBinaries(t)
	work := t.TempDir()
	t.Chdir(work)
	if err := os.Mkdir("planes", 0o700); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the first start makes the template, the second starts from it
		cp, err := Start(Options{BinaryDir: dir, TemplateDir: "templates", Dir: "planes"})
		if err != nil {
			t.Fatalf("start %d: %v", round+1, err)
		}
		cs, err := kubernetes.NewForConfig(cp.Config)
		if err == nil {
			_, err = cs.RbacV1().ClusterRoles().Get(t.Context(), "system:basic-user", metav1.GetOptions{})
		}
		if stopErr := cp.Stop(); stopErr != nil {
			t.Errorf("stop %d: %v", round+1, stopErr)
		}
		if err != nil {
			t.Fatalf("start %d serves no bootstrap ClusterRole system:basic-user: %v", round+1, err)
		}
	}
	templates, err := os.ReadDir(filepath.Join(work, "templates"))
	if err != nil || len(templates) != 1 {
		t.Fatalf("templates in %s: %v, %v; want one", filepath.Join(work, "templates"), templates, err)
	}
	if _, err := os.Stat(filepath.Join(work, "templates", templates[0].Name(), "member")); err != nil {
		t.Errorf("the template holds no etcd data: %v", err)
	}
}
