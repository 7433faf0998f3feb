package sidecar_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/internal/safequantity"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// managerNamespace stands in for the namespace the manager passes as
// SkipNamespaces.
const managerNamespace = "kubeharness-system"

// FuzzInjector posts arbitrary bodies to the sidecar injector as the manager
// registers it. Besides what every answer must be (see serve), it patches
// only Pod creations outside the namespaces it skips, and a patch yields
// exactly the injected Pod: Inject's containers and annotation added,
// everything the Pod carried kept, fields this build does not know
// included. The injected Pod, sent again, is left alone.
func FuzzInjector(f *testing.F) {
	addSeeds(f)
	scheme := newScheme()
	hook := quiet(&admission.Webhook{Handler: sidecar.NewInjector(scheme, sidecar.DefaultConfig(), managerNamespace)})
	decoder := admission.NewDecoder(scheme)
	f.Fuzz(func(t *testing.T, body []byte) {
		// The API server re-encodes the built-in objects it sends, their
		// quantities canonical; ParseQuantity can take minutes on forms it
		// never sends (see safequantity).
		if req, _ := decodeReview(body); req != nil && !apiServerCould(req.Object.Raw, req.OldObject.Raw) {
			return
		}
		req, resp := serve(t, hook, body)
		if req == nil {
			return
		}
		switch req.Namespace {
		case "kube-system", "kube-public", "kube-node-lease", managerNamespace:
			if !resp.Allowed || len(resp.Patch) != 0 {
				t.Fatalf("a request in namespace %s: allowed %v, patch %s; want allowed unchanged", req.Namespace, resp.Allowed, resp.Patch)
			}
			return
		}
		if req.Operation != admissionv1.Create {
			if !resp.Allowed || len(resp.Patch) != 0 {
				t.Fatalf("%s: allowed %v, patch %s; want allowed unchanged", req.Operation, resp.Allowed, resp.Patch)
			}
			return
		}
		pod := &corev1.Pod{}
		if err := decoder.Decode(admission.Request{AdmissionRequest: *req}, pod); err != nil {
			if resp.Allowed {
				t.Fatalf("allowed a Pod that does not decode: %v", err)
			}
			return
		}
		if !resp.Allowed {
			t.Fatalf("denied a Pod that decodes: %+v", resp.Result)
		}
		want := pod.DeepCopy()
		if !sidecar.Inject(want, sidecar.DefaultConfig()) {
			if len(resp.Patch) != 0 {
				t.Fatalf("patched a Pod that is not to be injected: %s", resp.Patch)
			}
			return
		}
		// The API server sends objects it encoded itself, never with
		// duplicate keys, on which JSON decoders disagree.
		if hasDuplicateKeys(req.Object.Raw) {
			return
		}
		patched := applyPatch(t, req.Object.Raw, resp)
		got := &corev1.Pod{}
		if err := decoder.DecodeRaw(runtime.RawExtension{Raw: patched}, got); err != nil {
			t.Fatalf("the patched Pod %s does not decode: %v", patched, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("patch %s turned the Pod into %+v, want %+v", resp.Patch, got, want)
		}
		if lost := lostValues(t, req.Object.Raw, patched); len(lost) > 0 {
			t.Fatalf("patch %s dropped %v from the Pod", resp.Patch, lost)
		}
		again := *req
		again.Object = runtime.RawExtension{Raw: patched}
		if _, resp := serve(t, hook, reviewJSON(t, &again)); !resp.Allowed || len(resp.Patch) != 0 {
			t.Fatalf("the injected Pod %s, sent again: allowed %v, patch %s; want allowed with no patch", patched, resp.Allowed, resp.Patch)
		}
	})
}

// lostValues lists, as JSON pointers, the values of raw that patched no
// longer holds: none may go, but for null, false, 0, "", {} and [], which
// decode as no value at all. Values may change form (a quantity 0.5 may
// become 500m); what they mean is compared on the decoded Pods. The
// injected init container comes first, so the Pod's own init containers
// move down one.
func lostValues(t *testing.T, raw, patched []byte) []string {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("the object of an allowed request is no JSON: %v", err)
	}
	if err := json.Unmarshal(patched, &b); err != nil {
		t.Fatalf("the patched object is no JSON: %v", err)
	}
	var lost []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		switch a := a.(type) {
		case map[string]any:
			bm, ok := b.(map[string]any)
			if !ok {
				lost = append(lost, path)
				return
			}
			for k, v := range a {
				p := path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
				if bv, ok := bm[k]; ok {
					walk(p, v, bv)
				} else if !isZero(v) {
					lost = append(lost, p)
				}
			}
		case []any:
			bl, ok := b.([]any)
			shift := 0
			if path == "/spec/initContainers" {
				shift = 1
			}
			if !ok || len(bl) < len(a)+shift {
				lost = append(lost, path)
				return
			}
			for i, v := range a {
				walk(path+"/"+strconv.Itoa(i), v, bl[i+shift])
			}
		}
	}
	walk("", a, b)
	return lost
}

// quantityForm matches what resource.ParseQuantity may read as a quantity.
var quantityForm = regexp.MustCompile(`^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?\s*$`)

// apiServerCould reports whether the API server could send these objects:
// every value in them that reads as a quantity passes safequantity.Check,
// as the canonical quantities the API server encodes do.
func apiServerCould(objects ...[]byte) bool {
	for _, raw := range objects {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			var s string
			switch tok := tok.(type) {
			case string:
				s = tok
			case json.Number:
				s = tok.String()
			default:
				continue
			}
			if quantityForm.MatchString(s) && safequantity.Check(s) != nil {
				return false
			}
		}
	}
	return true
}

// hasDuplicateKeys reports whether an object in the JSON value raw has a
// key twice.
func hasDuplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var value func() bool
	value = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return false
				}
				k, _ := key.(string)
				if seen[k] {
					return true
				}
				seen[k] = true
				if value() {
					return true
				}
			}
		case json.Delim('['):
			for dec.More() {
				if value() {
					return true
				}
			}
		default:
			return false
		}
		_, _ = dec.Token() // the closing delimiter
		return false
	}
	return value()
}

// isZero reports whether v, decoded JSON, is null, false, 0, "", {} or [].
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// addSeeds adds the sidecar admission fixtures and reviews for the cases
// they lack: dry runs, a field this build does not know, a v1beta1 review,
// a wrong kind, a missing object and huge fields.
func addSeeds(f *testing.F) {
	files, err := filepath.Glob("../../fixtures/admission/sidecar/*.request.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no sidecar admission fixtures: %v", err)
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
	review := func(op, namespace, object, extra string) []byte {
		s := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"3c1d0000-3333-4000-8000-000000000001",` +
			`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
			`"name":"web","namespace":"` + namespace + `","operation":"` + op + `","userInfo":{"username":"admin"}` + extra
		if object != "" {
			s += `,"object":` + object
		}
		return []byte(s + `}}`)
	}
	pod := func(spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","annotations":{"a/b~c":"d"}},"spec":` + spec + `}`
	}
	plain := pod(`{"containers":[{"name":"web","image":"nginx:1.27","resources":{"limits":{"cpu":"0.5"}}}]}`)
	for _, body := range [][]byte{
		review("CREATE", "shop", plain, `,"dryRun":true`),
		review("CREATE", "shop", pod(`{"initContainers":[{"name":"setup","image":"busybox","futureField":{"x":1}}],"containers":[{"name":"web","image":"nginx"}],"futureField":true}`), ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-"}}`, ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","annotations":null},"spec":{"containers":null,"initContainers":null}}`, ""),
		review("CREATE", "shop", pod(`{"containers":[{"name":"web","image":"`+strings.Repeat("n", 1<<14)+`"}]}`), ""),
		review("UPDATE", "shop", plain, `,"subResource":"status"`),
		review("DELETE", "shop", "", ""),
		review("CREATE", "kube-system", plain, ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"web"}}`, ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Pod","spec":{"containers":{}}}`, ""),
		review("CREATE", "shop", "", ""),
		bytes.Replace(review("CREATE", "shop", plain, ""), []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1),
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
