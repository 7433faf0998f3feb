package overcommit

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
	fixtureDir = "../../fixtures/admission/overcommit"
	updateHint = "go test ./webhook/overcommit -update"
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

// TestFixtures sends every request fixture through the webhook as the API
// server would, with DefaultConfig, and compares the outcome with its golden
// file. Then it sends the resulting Node again, as the same user, and expects
// the same Node back. From anyone but the Node's own kubelet that must take
// no patch. The kubelet's next heartbeat instead carries its real
// allocatable again, so it goes with the first request's allocatable.
func TestFixtures(t *testing.T) {
	hook := &admission.Webhook{Handler: New(clientgoscheme.Scheme, DefaultConfig())}
	for _, name := range fixtureCases(t, ".request.yaml") {
		t.Run(name, func(t *testing.T) {
			req := readRequest(t, name)
			resp := hook.Handle(context.Background(), req)
			t.Logf("patch: %s", resp.Patch)
			result := applyPatch(t, req.Object.Raw, resp)
			checkGolden(t, name, outcome(t, resp, result))

			fromKubelet := req.UserInfo.Username == "system:node:"+nodeName(t, req.Object.Raw)
			again := req
			again.OldObject = runtime.RawExtension{Raw: result}
			again.Object = runtime.RawExtension{Raw: result}
			if fromKubelet {
				again.Object.Raw = withAllocatableOf(t, result, req.Object.Raw)
			}
			resp = hook.Handle(context.Background(), again)
			if !resp.Allowed {
				t.Fatalf("sent again: denied: %+v", resp.Result)
			}
			if !fromKubelet && len(resp.Patch) != 0 {
				t.Errorf("sent again by %s: patch %s, want none", req.UserInfo.Username, resp.Patch)
			}
			if diff := cmp.Diff(decodeJSON(t, result), decodeJSON(t, applyPatch(t, again.Object.Raw, resp))); diff != "" {
				t.Errorf("sent again by %s, the Node came out different (-first +again):\n%s", req.UserInfo.Username, diff)
			}
		})
	}
}

// TestRepeatedHeartbeatFixture checks that the golden files of the first
// and the next heartbeat of a Node agree, as they must for overcommit not to
// compound.
func TestRepeatedHeartbeatFixture(t *testing.T) {
	read := func(name string) golden {
		data, err := os.ReadFile(filepath.Join(fixtureDir, name+".golden.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := yaml.UnmarshalStrict(data, &g); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return g
	}
	if diff := cmp.Diff(read("heartbeat-default-ratios"), read("heartbeat-repeated"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("first heartbeat (-) and next heartbeat (+) differ:\n%s", diff)
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
		got.Object = decodeJSON(t, result)
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

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func nodeName(t *testing.T, raw []byte) string {
	t.Helper()
	metadata, _ := decodeJSON(t, raw)["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	return name
}

// withAllocatableOf is node with the status.allocatable of reported.
func withAllocatableOf(t *testing.T, node, reported []byte) []byte {
	t.Helper()
	n, r := decodeJSON(t, node), decodeJSON(t, reported)
	n["status"].(map[string]any)["allocatable"] = r["status"].(map[string]any)["allocatable"]
	data, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
