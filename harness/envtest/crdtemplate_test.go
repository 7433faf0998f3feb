package envtest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/envtest"
)

// The CRDs a suite installs come from a template keyed by their content:
// a start after a CRD file changed serves the CRD as the file now says,
// and each start records where its time went (StartTimes, and one JSON
// line in $KUBEHARNESS_ENVTEST_TIMES).
func TestStartServesTheCRDsAsTheFilesSay(t *testing.T) {
	tunedOnly(t)
	assets(t)
	dir := t.TempDir()
	orig, err := os.ReadFile(filepath.Join("testdata", "crd", "widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	times := filepath.Join(t.TempDir(), "times.jsonl")
	t.Setenv(envtest.EnvTimes, times)

	startWith := func(crd string) (*envtest.Environment, apiextensionsv1.CustomResourceDefinition) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "widgets.yaml"), []byte(crd), 0o600); err != nil {
			t.Fatal(err)
		}
		env := &envtest.Environment{CRDDirectoryPaths: []string{dir}, ErrorIfCRDPathMissing: true}
		cfg, err := env.Start()
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer func() {
			if err := env.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}()
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: "widgets.test.kubeharness.dev"}, &got); err != nil {
			t.Fatalf("the installed CRD: %v", err)
		}
		return env, got
	}

	env, first := startWith(string(orig))
	if len(first.Spec.Names.ShortNames) != 0 {
		t.Errorf("short names %v before the file names any", first.Spec.Names.ShortNames)
	}
	st := env.StartTimes()
	t.Logf("%s", st)
	if st.CRDs != 1 || st.Install <= 0 || st.ControlPlane <= 0 || st.Total < st.ControlPlane+st.Install {
		t.Errorf("StartTimes %+v: want 1 CRD, an install and a control-plane time that add up to no more than the total", st)
	}

	withShortName := strings.Replace(string(orig), "    singular: widget\n", "    singular: widget\n    shortNames: [wdg]\n", 1)
	if withShortName == string(orig) {
		t.Fatal("testdata/crd/widgets.yaml has no `singular: widget` line to add a short name after")
	}
	_, second := startWith(withShortName)
	if !slices.Equal(second.Spec.Names.ShortNames, []string{"wdg"}) {
		t.Errorf("short names %v after the file added wdg; want [wdg]: a template of the old CRD was used as it was", second.Spec.Names.ShortNames)
	}

	data, err := os.ReadFile(times)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%s holds %d lines, want one per start (2):\n%s", envtest.EnvTimes, len(lines), data)
	}
	var rec struct {
		CRDs  int     `json:"crds"`
		Total float64 `json:"totalSeconds"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.CRDs != 1 || rec.Total <= 0 {
		t.Errorf("the first start's line %q (error %v): want 1 CRD and a total", lines[0], err)
	}
}
