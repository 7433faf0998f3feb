package playbook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/webhook/playbook"
)

// FuzzMutatingWebhook posts arbitrary bodies to the defaulting webhook as
// the manager registers it. Besides what every answer must be (see serve),
// an allowed patch applies to the object and yields exactly the defaulted
// Playbook, and defaulting that result again changes nothing.
func FuzzMutatingWebhook(f *testing.F) {
	addSeeds(f)
	scheme := newScheme()
	hook := quiet(admission.WithDefaulter[*opsv1.Playbook](scheme, playbook.Defaulter{}))
	decoder := admission.NewDecoder(scheme)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := serve(t, hook, body)
		if req == nil || !resp.Allowed {
			return
		}
		if req.Operation == admissionv1.Delete && len(resp.Patch) != 0 {
			t.Fatalf("DELETE answered with patch %s", resp.Patch)
		}
		// The webhook is registered for CREATE and UPDATE only.
		if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
			return
		}
		in := &opsv1.Playbook{}
		if err := decoder.DecodeRaw(req.Object, in); err != nil {
			t.Fatalf("allowed an object that does not decode: %v", err)
		}
		want := in.DeepCopy()
		if want.DeletionTimestamp == nil {
			playbook.DefaultPlaybook(want)
		}
		patched := applyPatch(t, req.Object.Raw, resp)
		got := &opsv1.Playbook{}
		if err := decoder.DecodeRaw(runtime.RawExtension{Raw: patched}, got); err != nil {
			t.Fatalf("the patched object %s does not decode: %v", patched, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("patch %s turned %s into %+v, want %+v", resp.Patch, req.Object.Raw, got, want)
		}
		again := *req
		again.Object = runtime.RawExtension{Raw: patched}
		if _, resp := serve(t, hook, reviewJSON(t, &again)); !resp.Allowed || len(resp.Patch) != 0 {
			t.Fatalf("the defaulted object %s, sent again: allowed %v, patch %s; want allowed with no patch", patched, resp.Allowed, resp.Patch)
		}
	})
}

// FuzzValidatingWebhook posts arbitrary bodies to the validating webhook as
// the manager registers it. Besides what every answer must be (see serve),
// it never patches, and whatever it allows keeps the Playbook rules: no
// forbidden abstract created or changed into, no protected Playbook deleted.
func FuzzValidatingWebhook(f *testing.F) {
	addSeeds(f)
	scheme := newScheme()
	hook := quiet(playbook.NewValidatingWebhook(scheme))
	decoder := admission.NewDecoder(scheme)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := serve(t, hook, body)
		if len(resp.Patch) != 0 || resp.PatchType != nil {
			t.Fatalf("a validating webhook answered with a patch: %s", resp.Patch)
		}
		if req == nil || !resp.Allowed {
			return
		}
		spec := field.NewPath("spec")
		decode := func(raw runtime.RawExtension) *opsv1.Playbook {
			pb := &opsv1.Playbook{}
			if err := decoder.DecodeRaw(raw, pb); err != nil {
				t.Fatalf("allowed %s with an object that does not decode: %v", req.Operation, err)
			}
			return pb
		}
		switch req.Operation {
		case admissionv1.Create:
			if errs := playbook.ValidateSpec(decode(req.Object).Spec, spec); len(errs) > 0 {
				t.Fatalf("allowed creating an invalid Playbook: %v", errs)
			}
		case admissionv1.Update:
			pb, old := decode(req.Object), decode(req.OldObject)
			if errs := playbook.ValidateSpecUpdate(pb.Spec, old.Spec, spec); pb.DeletionTimestamp == nil && len(errs) > 0 {
				t.Fatalf("allowed an update breaking a rule: %v", errs)
			}
		case admissionv1.Delete:
			if decode(req.OldObject).Spec.DeletionProtection {
				t.Fatal("allowed deleting a protected Playbook")
			}
		}
	})
}

// addSeeds adds the Playbook admission fixtures and reviews for the cases
// the fixtures lack: dry runs, updates with an oldObject, the status
// subresource, a v1beta1 review, a wrong kind, a missing object and huge
// fields.
func addSeeds(f *testing.F) {
	files, err := filepath.Glob("../../fixtures/admission/playbook-*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no Playbook admission fixtures: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		body, err := yaml.YAMLToJSON(data)
		if err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		f.Add(body)
	}
	obj := func(name, spec string) string {
		return `{"apiVersion":"ops.kubeharness.dev/v1","kind":"Playbook","metadata":{"name":"` + name + `","namespace":"default"},"spec":` + spec + `}`
	}
	review := func(op, object, oldObject, extra string) []byte {
		s := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"0f1c9a52-1111-4000-8000-000000000001",` +
			`"kind":{"group":"ops.kubeharness.dev","version":"v1","kind":"Playbook"},` +
			`"resource":{"group":"ops.kubeharness.dev","version":"v1","resource":"playbooks"},` +
			`"name":"pb","namespace":"default","operation":"` + op + `","userInfo":{"username":"admin"}` + extra
		if object != "" {
			s += `,"object":` + object
		}
		if oldObject != "" {
			s += `,"oldObject":` + oldObject
		}
		return []byte(s + `}}`)
	}
	plain, yellow := obj("pb", `{"abstract":"  Failover  "}`), obj("pb", `{"abstract":"a yellow book"}`)
	protected := obj("pb", `{"abstract":"Failover","deletionProtection":true}`)
	huge := obj("pb", `{"abstract":"`+strings.Repeat("yellow ", 1<<11)+`"}`)
	for _, body := range [][]byte{
		review("CREATE", plain, "", `,"dryRun":true`),
		review("CREATE", obj("", `{}`), "", ""),
		review("CREATE", `{"apiVersion":"ops.kubeharness.dev/v1","kind":"Playbook","metadata":{"generateName":"nightly-"}}`, "", ""),
		review("UPDATE", yellow, plain, ""),
		review("UPDATE", yellow, yellow, ""),
		review("UPDATE", obj("pb", `{"abstract":""}`), plain, `,"subResource":"status"`),
		review("UPDATE", `{"apiVersion":"ops.kubeharness.dev/v1","kind":"Playbook","metadata":{"name":"pb","deletionTimestamp":"2026-07-01T10:00:00Z","finalizers":["ops.kubeharness.dev/cleanup"]},"spec":{"abstract":"yellow"}}`, plain, ""),
		review("UPDATE", plain, "", ""),
		review("DELETE", "", protected, `,"dryRun":true`),
		review("DELETE", "", plain, ""),
		review("DELETE", "", "", ""),
		review("CONNECT", plain, "", ""),
		review("CREATE", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pb"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, "", ""),
		review("CREATE", `{"apiVersion":"ops.kubeharness.dev/v2","kind":"Playbook","metadata":{"name":"pb"}}`, "", ""),
		review("CREATE", `{"kind":"Playbook","spec":{"abstract":7}}`, "", ""),
		review("CREATE", "", "", ""),
		review("CREATE", `null`, "", ""),
		review("CREATE", huge, "", ""),
		bytes.Replace(review("CREATE", plain, "", ""), []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
		[]byte(`{"request":{"uid":"x","operation":"CREATE","object":{}}}`),
		[]byte(`not json`),
		{},
	} {
		f.Add(body)
	}
}

// newScheme holds the types of the manager's scheme (manager.Scheme), which
// the webhooks decode with. Importing the manager instead would build its
// metrics and authentication stack into every fuzzing binary.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(opsv1.AddToScheme(s))
	utilruntime.Must(appv1.AddToScheme(s))
	return s
}

// quiet makes hook panic instead of answering 500 to a panic, so that the
// fuzzer reports the panic with its stack, and discards the webhook's logs.
func quiet(hook *admission.Webhook) *admission.Webhook {
	log.SetLogger(logr.Discard())
	hook.RecoverPanic = ptr.To(false)
	return hook
}

// reviewCodecs decode AdmissionReviews as controller-runtime's webhook
// does, v1beta1 into the v1 type.
var reviewCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := admissionv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := admissionv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s)
}()

// anyReview is deliberately not in reviewCodecs' scheme, so that a v1beta1
// review decodes into it as well (as in controller-runtime).
type anyReview struct{ admissionv1.AdmissionReview }

// decodeReview decodes body as the webhook does: the request, and the
// version of the review (nil when body is not a review).
func decodeReview(body []byte) (*admissionv1.AdmissionRequest, *schema.GroupVersionKind) {
	req := &admissionv1.AdmissionRequest{}
	ar := &anyReview{}
	ar.Request = req
	ar.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	_, gvk, err := reviewCodecs.UniversalDeserializer().Decode(body, nil, ar)
	if err != nil {
		return nil, nil
	}
	return req, gvk
}

// answerTimeout is the longest timeout of the webhooks' configurations.
const answerTimeout = 10 * time.Second

// serve posts body to hook with the API server's content type and checks
// what every answer must be, whatever the body: no panic, no 5xx, an
// AdmissionReview answering the request's UID in the request's version, a
// denial saying why in a 4xx status, and a patch only in a JSON Patch. It
// returns the request (nil when body is no AdmissionReview, which must be
// denied) and the response.
func serve(t *testing.T, hook *admission.Webhook, body []byte) (*admissionv1.AdmissionRequest, *admissionv1.AdmissionResponse) {
	t.Helper()
	// A webhook that does not answer within its timeout (10s at most)
	// has failed; the watchdog's panic makes the fuzzer report the input,
	// where a hang would only stall the run.
	watchdog := time.AfterFunc(answerTimeout, func() { panic(fmt.Sprintf("no answer within %s to %.300q", answerTimeout, body)) })
	defer watchdog.Stop()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	hook.ServeHTTP(rec, r)
	if rec.Code >= 500 {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
		t.Fatalf("the answer %s is no AdmissionReview with a response (%v)", rec.Body, err)
	}
	resp := out.Response
	code := int32(http.StatusOK)
	if resp.Result != nil && resp.Result.Code != 0 {
		code = resp.Result.Code
	}
	if code >= 500 {
		t.Fatalf("answered %d: %+v", code, resp.Result)
	}
	if !resp.Allowed && (code < 400 || resp.Result == nil || strings.TrimSpace(resp.Result.Message) == "") {
		t.Fatalf("a denial must say why in a 4xx status: %+v", resp.Result)
	}
	if resp.Allowed && code >= 400 {
		t.Fatalf("allowed with status %d: %+v", code, resp.Result)
	}
	if (len(resp.Patch) != 0) != (resp.PatchType != nil) || (resp.PatchType != nil && *resp.PatchType != admissionv1.PatchTypeJSONPatch) {
		t.Fatalf("patch %s of type %v: a patch must come with type JSONPatch, and only with a patch", resp.Patch, resp.PatchType)
	}
	if !resp.Allowed && len(resp.Patch) != 0 {
		t.Fatalf("a denial with a patch: %s", resp.Patch)
	}
	for _, w := range resp.Warnings {
		if strings.Contains(w, "panic") {
			t.Fatalf("warning %q", w)
		}
	}
	req, gvk := decodeReview(body)
	if req == nil {
		if resp.Allowed {
			t.Fatalf("allowed a body that is no AdmissionReview: %q", body)
		}
		return nil, resp
	}
	if resp.UID != req.UID {
		t.Fatalf("answered UID %q to request UID %q", resp.UID, req.UID)
	}
	// A review that names no version is answered in v1.
	if gvk.Empty() {
		*gvk = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	}
	if out.GroupVersionKind() != *gvk {
		t.Fatalf("answered a %v review with a %v", *gvk, out.GroupVersionKind())
	}
	return req, resp
}

// applyPatch applies resp's patch to raw, as the API server would.
func applyPatch(t *testing.T, raw []byte, resp *admissionv1.AdmissionResponse) []byte {
	t.Helper()
	if len(resp.Patch) == 0 {
		return raw
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("the patch %s is no JSON Patch: %v", resp.Patch, err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("the patch %s does not apply to %s: %v", resp.Patch, raw, err)
	}
	return patched
}

// reviewJSON is req in a v1 AdmissionReview.
func reviewJSON(t *testing.T, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	review := admissionv1.AdmissionReview{Request: req}
	review.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return body
}
