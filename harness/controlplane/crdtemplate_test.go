package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// gadgetCRD is a namespaced CRD of group example.com named plural+".example.com".
func gadgetCRD(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestCRDsSumIsTheirContentInAnyOrder(t *testing.T) {
	a, b := gadgetCRD("gadgets", "Gadget"), gadgetCRD("gizmos", "Gizmo")
	ab, err := crdsSum([]*apiextensionsv1.CustomResourceDefinition{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// What an install wrote back into the objects is not their content.
	installed := a.DeepCopy()
	installed.ResourceVersion, installed.UID = "42", "1d2c"
	installed.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	ba, err := crdsSum([]*apiextensionsv1.CustomResourceDefinition{b, installed})
	if err != nil {
		t.Fatal(err)
	}
	if ab != ba {
		t.Errorf("the same CRDs in another order, after an install: sum %s, want %s", ba, ab)
	}
	changed := b.DeepCopy()
	changed.Spec.Names.ShortNames = []string{"gz"}
	other, err := crdsSum([]*apiextensionsv1.CustomResourceDefinition{a, changed})
	if err != nil {
		t.Fatal(err)
	}
	if other == ab {
		t.Errorf("a changed CRD kept the sum %s", ab)
	}
}

// Templates beyond the keptCRDTemplates most recently used are removed
// unless used within crdTemplateIdle; the one just made, other base
// templates' and the base itself stay.
func TestPruneCRDTemplatesKeepsTheRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ages := map[string]time.Duration{
		// The four most recently used,
		"base1-crds-f": time.Minute, "base1-crds-e": 2 * time.Minute, "base1-crds-d": 3 * time.Minute, "base1-crds-c": 4 * time.Minute,
		// one used within crdTemplateIdle, one not,
		"base1-crds-b": 30 * time.Minute, "base1-crds-a": 10 * time.Hour,
		// the one just made (from a template copied long ago),
		"base1-crds-made": 20 * time.Hour,
		// another base's, and the base itself.
		"base2-crds-x": 30 * time.Hour, "base1": 40 * time.Hour,
	}
	for name, age := range ages {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	pruneCRDTemplates(filepath.Join(dir, "base1-crds-made"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"base1", "base1-crds-b", "base1-crds-c", "base1-crds-d", "base1-crds-e", "base1-crds-f", "base1-crds-made", "base2-crds-x"}
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// A start given CRDs serves them from the start: nothing installs them,
// yet they are there established, from a template made on the first start
// with them; and a start with the same CRDs in another order uses the
// same template, while a changed CRD makes another.
func TestStartWithCRDsServesThemFromTheTemplate(t *testing.T) {
	dir, _, _, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use VERSION` or set KUBEBUILDER_ASSETS", err)
	}
	templates := t.TempDir()
	crds := []*apiextensionsv1.CustomResourceDefinition{gadgetCRD("gadgets", "Gadget"), gadgetCRD("gizmos", "Gizmo")}
	start := func(crds []*apiextensionsv1.CustomResourceDefinition) *ControlPlane {
		t.Helper()
		cp, err := Start(Options{BinaryDir: dir, TemplateDir: templates, CRDs: crds})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := cp.Stop(); err != nil {
				t.Error(err)
			}
		})
		return cp
	}
	listTemplates := func() []string {
		t.Helper()
		entries, err := os.ReadDir(templates)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if strings.Contains(e.Name(), crdTemplateInfix) {
				names = append(names, e.Name())
			}
		}
		return names
	}

	cp := start(crds)
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, want := range crds {
		var got apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
			t.Fatalf("CRD %s right after the start: %v", want.Name, err)
		}
		established := slices.ContainsFunc(got.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		if !established {
			t.Errorf("CRD %s right after the start (nothing installed it): conditions %v; want established, from the template", want.Name, got.Status.Conditions)
		}
		if got.Generation != 1 {
			t.Errorf("CRD %s: generation %d, want 1 (installed once)", want.Name, got.Generation)
		}
	}
	// Discovery serves them once the API server's discovery has caught up;
	// controller-runtime's InstallCRDs waits for this.
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	var lastErr error
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		rl, err := dc.ServerResourcesForGroupVersion("example.com/v1")
		lastErr = err
		return err == nil && slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "gizmos" }), nil
	}); err != nil {
		t.Fatalf("discovery never served example.com/v1 gizmos: %v (last error %v)", err, lastErr)
	}
	made := listTemplates()
	if len(made) != 1 {
		t.Fatalf("CRD templates after the first start: %v, want one", made)
	}

	start([]*apiextensionsv1.CustomResourceDefinition{crds[1], crds[0]})
	if again := listTemplates(); !slices.Equal(again, made) {
		t.Errorf("CRD templates after a start with the same CRDs: %v, want %v", again, made)
	}
	changed := crds[1].DeepCopy()
	changed.Spec.Names.ShortNames = []string{"gz"}
	start([]*apiextensionsv1.CustomResourceDefinition{crds[0], changed})
	if after := listTemplates(); len(after) != 2 {
		t.Errorf("CRD templates after a start with a changed CRD: %v, want two", after)
	}

	// A CRD template that others could have written is refused, as a base
	// template is: another user could have put a ClusterRoleBinding in it.
	spoiled := filepath.Join(templates, made[0])
	for _, spoil := range []struct{ path, mode string }{{spoiled, "drwxrwxrwx"}, {filepath.Join(spoiled, "member", "snap", "db"), "-rw-rw-rw-"}} {
		mode := os.FileMode(0o666)
		if strings.HasPrefix(spoil.mode, "d") {
			mode = 0o777
		}
		fi, err := os.Stat(spoil.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(spoil.path, mode); err != nil {
			t.Fatal(err)
		}
		cp, err := Start(Options{BinaryDir: dir, TemplateDir: templates, CRDs: crds})
		if err == nil {
			_ = cp.Stop()
			t.Errorf("Start used the CRD template with %s at %s", spoil.mode, spoil.path)
		} else if msg := err.Error(); !strings.Contains(msg, spoil.path) || !strings.Contains(msg, spoil.mode) || !strings.Contains(msg, "chmod go-w") {
			t.Errorf("Start refused the CRD template with %s at %s saying %q; want the path, the mode and the fix", spoil.mode, spoil.path, msg)
		}
		if err := os.Chmod(spoil.path, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}
