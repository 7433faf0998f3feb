package playbook_test

import (
	"bytes"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/webhook/playbook"
)

// FuzzMutatingWebhook posts arbitrary bodies to the defaulting webhook as
// the manager registers it. Besides what every answer must be (see serve),
// an allowed patch applies to the object and yields exactly the defaulted
// Playbook, and defaulting that result again changes nothing.
func FuzzMutatingWebhook(f *testing.F) {
	addSeeds(f)
	s := scheme.New()
	hook := admissiontest.Quiet(admission.WithDefaulter[*opsv1.Playbook](s, playbook.Defaulter{}))
	decoder := admission.NewDecoder(s)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := admissiontest.Serve(t, hook, body)
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
		patched := admissiontest.ApplyPatch(t, req.Object.Raw, resp)
		got := &opsv1.Playbook{}
		if err := decoder.DecodeRaw(runtime.RawExtension{Raw: patched}, got); err != nil {
			t.Fatalf("the patched object %s does not decode: %v", patched, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("patch %s turned %s into %+v, want %+v", resp.Patch, req.Object.Raw, got, want)
		}
		again := *req
		again.Object = runtime.RawExtension{Raw: patched}
		if _, resp := admissiontest.Serve(t, hook, admissiontest.ReviewJSON(t, &again)); !resp.Allowed || len(resp.Patch) != 0 {
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
	s := scheme.New()
	hook := admissiontest.Quiet(playbook.NewValidatingWebhook(s))
	decoder := admission.NewDecoder(s)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := admissiontest.Serve(t, hook, body)
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
	admissiontest.AddFixtures(f, "../../fixtures/admission/playbook-*.yaml")
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
