package appservice_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
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
	s := scheme.New()
	hook := admissiontest.Quiet(&admission.Webhook{Handler: appservice.NewValidator(s, authorize)})
	decoder := admission.NewDecoder(s)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := admissiontest.Serve(t, hook, body)
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
