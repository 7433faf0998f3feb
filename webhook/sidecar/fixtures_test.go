package sidecar

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	fixtureDir = "../../fixtures/admission/sidecar"
	updateHint = "go test ./webhook/sidecar -update"
	// managerNamespace stands in for the namespace the manager passes as
	// SkipNamespaces.
	managerNamespace = "kubeharness-system"
)

// golden is the expected outcome of a <case>.request.yaml, kept in
// <case>.golden.yaml.
type golden struct {
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings"`
	Patched  bool     `json:"patched"`
	// Object is the request's object with the response's patch applied.
	Object map[string]any `json:"object,omitempty"`
}

// TestFixtures sends every request fixture through the webhook as the
// server would, compares the outcome with its golden file, and sends the
// resulting Pod again to check that the webhook has nothing left to change.
func TestFixtures(t *testing.T) {
	hook := &admission.Webhook{Handler: NewInjector(clientgoscheme.Scheme, DefaultConfig(), managerNamespace)}
	for _, name := range fixtureCases(t, ".request.yaml") {
		t.Run(name, func(t *testing.T) {
			req := readRequest(t, name)
			resp := hook.Handle(context.Background(), req)
			t.Logf("patch: %s", resp.Patch)
			result := applyPatch(t, req.Object.Raw, resp)
			checkGolden(t, name, outcome(t, resp, result))

			again := req
			again.OldObject = req.Object
			again.Object = runtime.RawExtension{Raw: result}
			resp = hook.Handle(context.Background(), again)
			if !resp.Allowed || len(resp.Patch) != 0 {
				t.Errorf("sent again after the patch: allowed %v, patch %s; want allowed and no patch", resp.Allowed, resp.Patch)
			}
		})
	}
}

// TestFixturesPaired fails on a request without a golden file, a golden
// file left behind by a removed request, and a case the README does not
// list.
func TestFixturesPaired(t *testing.T) {
	requests := fixtureCases(t, ".request.yaml")
	goldens := fixtureCases(t, ".golden.yaml")
	if !*update {
		for _, name := range requests {
			if !slices.Contains(goldens, name) {
				t.Errorf("%s.request.yaml has no golden file; create it with %s", name, updateHint)
			}
		}
	}
	for _, name := range goldens {
		if !slices.Contains(requests, name) {
			t.Errorf("%s.golden.yaml is stale: there is no %s.request.yaml; delete it", name, name)
		}
	}
	readme, err := os.ReadFile(filepath.Join(fixtureDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range requests {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("the README in %s does not list case `%s`", fixtureDir, name)
		}
	}
}

// fixtureCases names the fixtures whose files end in suffix.
func fixtureCases(t *testing.T, suffix string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), suffix))
	}
	return names
}

func readRequest(t *testing.T, name string) admission.Request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name+".request.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	review := &admissionv1.AdmissionReview{}
	if err := yaml.UnmarshalStrict(data, review); err != nil {
		t.Fatalf("%s.request.yaml: %v", name, err)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" || review.Request == nil {
		t.Fatalf("%s.request.yaml is not an admission.k8s.io/v1 AdmissionReview with a request", name)
	}
	return admission.Request{AdmissionRequest: *review.Request}
}

// applyPatch applies the response's JSON patch to raw as the API server
// would.
func applyPatch(t *testing.T, raw []byte, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patch) == 0 {
		return raw
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want %s", resp.PatchType, admissionv1.PatchTypeJSONPatch)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("decoding the patch %s: %v", resp.Patch, err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying the patch %s: %v", resp.Patch, err)
	}
	return patched
}

func outcome(t *testing.T, resp admission.Response, result []byte) golden {
	t.Helper()
	got := golden{Allowed: resp.Allowed, Warnings: []string{}, Patched: len(resp.Patch) != 0}
	got.Warnings = append(got.Warnings, resp.Warnings...)
	if resp.Result != nil {
		got.Message = resp.Result.Message
	}
	if got.Patched {
		if err := json.Unmarshal(result, &got.Object); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// checkGolden compares got with the case's golden file, or with -update
// writes it there.
func checkGolden(t *testing.T, name string, got golden) {
	t.Helper()
	path := filepath.Join(fixtureDir, name+".golden.yaml")
	if *update {
		data, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		header := "# Expected outcome of " + name + ".request.yaml; rewrite with " + updateHint + ".\n"
		if err := os.WriteFile(path, append([]byte(header), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with %s", err, updateHint)
	}
	var want golden
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s differs from the outcome (-want +got):\n%s\nIf the new outcome is right, rewrite the golden files with %s", path, diff, updateHint)
	}
}
