package appservice_test

import (
	"bytes"
	"context"
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
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
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

	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/webhook/appservice"
)

// forbiddenPrefix names the Secrets and ConfigMaps nobody may read under
// authorize.
const forbiddenPrefix = "forbidden"

// authorize stands in for the API server's SubjectAccessReviews: every get
// is allowed but of objects named with forbiddenPrefix.
func authorize(_ context.Context, _ authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, string, error) {
	if strings.HasPrefix(a.Name, forbiddenPrefix) {
		return false, "no RBAC rule allows it", nil
	}
	return true, "", nil
}

// FuzzValidatingWebhook posts arbitrary bodies to the AppService webhook as
// the manager registers it, with authorize for the API server. Besides what
// every answer must be (see serve), it never patches, and whatever it
// allows is a valid AppService whose author may read every Secret and
// ConfigMap it references, unless an update leaves the spec as it was.
func FuzzValidatingWebhook(f *testing.F) {
	addSeeds(f)
	scheme := newScheme()
	hook := quiet(&admission.Webhook{Handler: appservice.NewValidator(scheme, authorize)})
	decoder := admission.NewDecoder(scheme)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := serve(t, hook, body)
		if len(resp.Patch) != 0 || resp.PatchType != nil {
			t.Fatalf("a validating webhook answered with a patch: %s", resp.Patch)
		}
		if req == nil || !resp.Allowed || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
			return
		}
		decode := func(raw runtime.RawExtension) *appv1.AppService {
			app := &appv1.AppService{}
			if err := decoder.DecodeRaw(raw, app); err != nil {
				t.Fatalf("allowed %s with an object that does not decode: %v", req.Operation, err)
			}
			return app
		}
		app := decode(req.Object)
		if req.Operation == admissionv1.Update && equality.Semantic.DeepEqual(decode(req.OldObject).Spec, app.Spec) {
			return
		}
		if errs := appservice.ValidateSpec(app.Spec, field.NewPath("spec")); len(errs) > 0 {
			t.Fatalf("allowed an invalid spec: %v", errs)
		}
		for _, env := range app.Spec.Envs {
			if env.ValueFrom == nil {
				continue
			}
			if s := env.ValueFrom.SecretKeyRef; s != nil && strings.HasPrefix(s.Name, forbiddenPrefix) {
				t.Fatalf("allowed a reference to Secret %q, which its author may not read", s.Name)
			}
			if c := env.ValueFrom.ConfigMapKeyRef; c != nil && strings.HasPrefix(c.Name, forbiddenPrefix) {
				t.Fatalf("allowed a reference to ConfigMap %q, which its author may not read", c.Name)
			}
		}
	})
}

// addSeeds adds reviews of creates, updates (the spec changed or not),
// deletes, dry runs, the status subresource, a v1beta1 review, a wrong
// kind, a missing object and huge fields.
func addSeeds(f *testing.F) {
	obj := func(spec string) string {
		return `{"apiVersion":"app.kubeharness.dev/v1","kind":"AppService","metadata":{"name":"web","namespace":"shop"},"spec":` + spec + `}`
	}
	review := func(op, object, oldObject, extra string) []byte {
		s := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"5a1c0000-2222-4000-8000-000000000001",` +
			`"kind":{"group":"app.kubeharness.dev","version":"v1","kind":"AppService"},` +
			`"resource":{"group":"app.kubeharness.dev","version":"v1","resource":"appservices"},` +
			`"name":"web","namespace":"shop","operation":"` + op + `","userInfo":{"username":"mallory","groups":["system:authenticated"]}` + extra
		if object != "" {
			s += `,"object":` + object
		}
		if oldObject != "" {
			s += `,"oldObject":` + oldObject
		}
		return []byte(s + `}}`)
	}
	plain := obj(`{"size":1,"image":"nginx:1.27","ports":[{"name":"http","port":80}]}`)
	refs := obj(`{"size":1,"image":"nginx:1.27","ports":[{"name":"http","port":80,"targetPort":"http"}],"envs":[` +
		`{"name":"PASSWORD","valueFrom":{"secretKeyRef":{"name":"forbidden-db","key":"password"}}},` +
		`{"name":"MODE","valueFrom":{"configMapKeyRef":{"name":"settings","key":"mode"}}},` +
		`{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},{"name":"LEVEL","value":"debug"}]}`)
	invalid := obj(`{"image":"nginx","ports":[{"port":80},{"name":"HTTP_","port":81,"targetPort":"web","nodePort":30000},{"name":"b","port":82,"nodePort":30000,"targetPort":70000}],` +
		`"resources":{"requests":{"cpu":"2","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}}`)
	costly := obj(`{"image":"nginx","ports":[{"name":"http","port":80}],"resources":{"limits":{"cpu":"1e-2147483647"},"requests":{"memory":1e-999}},` +
		`"envs":[{"name":"CPU","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"2E6024865272343"}}}]}`)
	huge := obj(`{"image":"nginx","ports":[{"name":"http","port":80}],"envs":[{"name":"BIG","value":"` + strings.Repeat("x", 1<<14) + `"}]}`)
	for _, body := range [][]byte{
		review("CREATE", plain, "", ""),
		review("CREATE", refs, "", `,"dryRun":true`),
		review("CREATE", invalid, "", ""),
		review("UPDATE", refs, plain, ""),
		review("UPDATE", refs, refs, ""),
		review("UPDATE", plain, refs, `,"subResource":"status"`),
		review("UPDATE", plain, "", ""),
		review("DELETE", "", refs, ""),
		review("CONNECT", plain, "", ""),
		review("CREATE", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}`, "", ""),
		review("CREATE", `{"kind":"AppService","spec":{"ports":"80"}}`, "", ""),
		review("CREATE", "", "", ""),
		review("CREATE", huge, "", ""),
		review("CREATE", costly, "", ""),
		review("UPDATE", plain, costly, ""),
		bytes.Replace(review("CREATE", refs, "", ""), []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1),
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
