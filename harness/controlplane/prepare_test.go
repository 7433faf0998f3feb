package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// linkedBinaries links etcd and the API servers of the test binaries into
// a directory of the test's own, so that a template made beside them
// stays the test's.
func linkedBinaries(t *testing.T) string {
	t.Helper()
	dir, _, _, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use VERSION` or set KUBEBUILDER_ASSETS", err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{etcdBinary, apiServerBinary, apiServerTestBinary} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			continue
		}
		if err := os.Link(filepath.Join(dir, name), filepath.Join(bin, name)); err != nil {
			t.Skipf("cannot link the binaries into the test's directory: %v", err)
		}
	}
	return bin
}

// A base template PrepareTemplate makes beside the binaries is what a
// start without Options.TemplateDir begins from: the start bootstraps
// nothing and leaves no base template in the user's cache; CRDs no
// template holds are installed on the start's own plane and its etcd's
// data kept as their template, in the user's cache.
func TestStartsBeginFromTheTemplateBesideTheBinaries(t *testing.T) {
	bin := linkedBinaries(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	o := Options{BinaryDir: bin, APIServerFlags: EnvtestAPIServerFlags()}
	prepared, err := PrepareTemplate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(prepared) != TemplatesBeside(bin) {
		t.Fatalf("PrepareTemplate made %s, want it in %s", prepared, TemplatesBeside(bin))
	}
	if again, err := PrepareTemplate(context.Background(), o); err != nil || again != prepared {
		t.Errorf("PrepareTemplate again = %s, %v; want %s", again, err, prepared)
	}

	start := func(o Options) StartTimes {
		t.Helper()
		cp, err := Start(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
		return cp.Times
	}
	if made := start(o).Made; len(made) > 0 {
		t.Errorf("a start after PrepareTemplate made the %v template", made)
	}
	withCRDs := o
	withCRDs.CRDs = []*apiextensionsv1.CustomResourceDefinition{gadgetCRD("gadgets", "Gadget")}
	if made := start(withCRDs).Made; canFreeze && !slices.Equal(made, []string{"CRDs"}) {
		t.Errorf("the first start with CRDs made %v, want the CRDs' template only", made)
	}
	if made := start(withCRDs).Made; len(made) > 0 {
		t.Errorf("the second start with CRDs made the %v template", made)
	}

	cached, err := os.ReadDir(filepath.Join(cache, "kubeharness", "etcd-templates"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range cached {
		names = append(names, e.Name())
	}
	if len(names) != 1 || !strings.HasPrefix(names[0], filepath.Base(prepared)+crdTemplateInfix) {
		t.Errorf("the user's cache holds %v, want the CRDs' template of %s only", names, filepath.Base(prepared))
	}
}

// A start that finds no template bootstraps on its own plane and keeps
// its etcd's data twice: as the base template once bootstrapped, and as
// the CRDs' template once they are installed. The next start makes
// nothing.
func TestAFirstStartMakesItsTemplatesWithoutAStartOfItsOwn(t *testing.T) {
	if !canFreeze {
		t.Skip("this system's starts make a missing template with a start of its own")
	}
	// Binaries of the test's own: none has a template beside it yet.
	dir := linkedBinaries(t)
	templates := t.TempDir()
	o := Options{BinaryDir: dir, TemplateDir: templates, CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD("gadgets", "Gadget")}}
	for i, want := range [][]string{{"base", "CRDs"}, nil} {
		cp, err := Start(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
		if !slices.Equal(cp.Times.Made, want) {
			t.Errorf("start %d made %v, want %v (%s)", i+1, cp.Times.Made, want, cp.Times)
		}
	}
}
