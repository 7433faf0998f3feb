package admissiontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Quiet makes hook panic instead of answering 500 to a panic, so that a
// fuzzer reports the panic with its stack, and discards the webhook's logs.
func Quiet(hook *admission.Webhook) *admission.Webhook {
	log.SetLogger(logr.Discard())
	hook.RecoverPanic = ptr.To(false)
	return hook
}

// reviewCodecs decode AdmissionReviews as controller-runtime's webhook
// does, v1beta1 into the v1 type.
var reviewCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	utilruntime.Must(admissionv1.AddToScheme(s))
	utilruntime.Must(admissionv1beta1.AddToScheme(s))
	return serializer.NewCodecFactory(s)
}()

// anyReview is deliberately not in reviewCodecs' scheme, so that a v1beta1
// review decodes into it as well (as in controller-runtime).
type anyReview struct{ admissionv1.AdmissionReview }

// DecodeReview decodes body as the webhook does: the request, and the
// version of the review (nil when body is not a review).
func DecodeReview(body []byte) (*admissionv1.AdmissionRequest, *schema.GroupVersionKind) {
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

// Serve posts body to hook with the API server's content type and checks
// what every answer must be, whatever the body: no panic, no 5xx, an
// AdmissionReview answering the request's UID in the request's version, a
// denial saying why in a 4xx status, and a patch only in a JSON Patch. It
// returns the request (nil when body is no AdmissionReview, which must be
// denied) and the response.
func Serve(t testing.TB, hook *admission.Webhook, body []byte) (*admissionv1.AdmissionRequest, admission.Response) {
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
	resp := admission.Response{AdmissionResponse: *out.Response}
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
	req, gvk := DecodeReview(body)
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

// ReviewJSON is req in a v1 AdmissionReview.
func ReviewJSON(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	review := admissionv1.AdmissionReview{Request: req}
	review.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return body
}
