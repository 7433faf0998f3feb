package admissiontest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"
)

// Suite is a directory of fixtures: each case is a <case>.request.yaml,
// an admission.k8s.io/v1 AdmissionReview with a request, and a
// <case>.golden.yaml, its expected outcome. A README.md in the directory
// lists every case.
type Suite struct {
	// Dir is the fixture directory, relative to the test package.
	Dir string
	// UpdateHint is the command that rewrites the golden files, such as
	// "go test ./webhook/sidecar -update".
	UpdateHint string
	// Update rewrites the golden files instead of comparing with them. Set
	// it from the test package's -update flag inside a test, once flags
	// are parsed.
	Update bool
}

// Golden is the expected outcome of a <case>.request.yaml, kept in
// <case>.golden.yaml.
type Golden struct {
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings"`
	Patched  bool     `json:"patched"`
	// Object is the request's object with the response's patch applied.
	Object map[string]any `json:"object,omitempty"`
}

// Run sends every request fixture through hook as the webhook server
// would, each in a subtest named after its case, and compares the outcome
// with its golden file. Then it calls check, if not nil, with the request
// and the request's object with the response's patch applied, for checks
// of the case's own.
func (s Suite) Run(t *testing.T, hook *admission.Webhook, check func(t *testing.T, req admission.Request, result []byte)) {
	t.Helper()
	for _, name := range s.Cases(t, ".request.yaml") {
		t.Run(name, func(t *testing.T) {
			req := s.ReadRequest(t, name)
			resp := hook.Handle(context.Background(), req)
			t.Logf("patch: %s", resp.Patch)
			result := ApplyPatch(t, req.Object.Raw, resp)
			s.CheckGolden(t, name, Outcome(t, resp, result))
			if check != nil {
				check(t, req, result)
			}
		})
	}
}

// Cases names the fixtures whose files end in suffix.
func (s Suite) Cases(t testing.TB, suffix string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.Dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), suffix))
	}
	return names
}

// ReadRequest reads the request of <name>.request.yaml.
func (s Suite) ReadRequest(t testing.TB, name string) admission.Request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, name+".request.yaml"))
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

// ApplyPatch applies the response's JSON patch to raw as the API server
// would.
func ApplyPatch(t testing.TB, raw []byte, resp admission.Response) []byte {
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

// Outcome is the golden record of resp, where result is the request's
// object with resp's patch applied.
func Outcome(t testing.TB, resp admission.Response, result []byte) Golden {
	t.Helper()
	got := Golden{Allowed: resp.Allowed, Warnings: []string{}, Patched: len(resp.Patch) != 0}
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

// ReadGolden reads <name>.golden.yaml.
func (s Suite) ReadGolden(t testing.TB, name string) Golden {
	t.Helper()
	path := filepath.Join(s.Dir, name+".golden.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with %s", err, s.UpdateHint)
	}
	var g Golden
	if err := yaml.UnmarshalStrict(data, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

// CheckGolden compares got with the case's golden file, or with Update
// writes it there.
func (s Suite) CheckGolden(t testing.TB, name string, got Golden) {
	t.Helper()
	path := filepath.Join(s.Dir, name+".golden.yaml")
	if s.Update {
		data, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		header := "# Expected outcome of " + name + ".request.yaml; rewrite with " + s.UpdateHint + ".\n"
		if err := os.WriteFile(path, append([]byte(header), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := s.ReadGolden(t, name)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s differs from the outcome (-want +got):\n%s\nIf the new outcome is right, rewrite the golden files with %s", path, diff, s.UpdateHint)
	}
}

// CheckPaired fails on a request without a golden file (unless Update is
// set, which is about to write it), a golden file left behind by a removed
// request, and a case the README does not list.
func (s Suite) CheckPaired(t testing.TB) {
	t.Helper()
	requests := s.Cases(t, ".request.yaml")
	goldens := s.Cases(t, ".golden.yaml")
	if !s.Update {
		for _, name := range requests {
			if !slices.Contains(goldens, name) {
				t.Errorf("%s.request.yaml has no golden file; create it with %s", name, s.UpdateHint)
			}
		}
	}
	for _, name := range goldens {
		if !slices.Contains(requests, name) {
			t.Errorf("%s.golden.yaml is stale: there is no %s.request.yaml; delete it", name, name)
		}
	}
	readme, err := os.ReadFile(filepath.Join(s.Dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range requests {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("the README in %s does not list case `%s`", s.Dir, name)
		}
	}
}
