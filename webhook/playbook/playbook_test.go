package playbook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	. "github.com/kubeharness/kubeharness/internal/testutil"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

func TestDefaultPlaybook(t *testing.T) {
	cases := []struct {
		name string
		in   *opsv1.Playbook
		want string
	}{
		{name: "kept", in: MakePlaybook("a", "ns").Abstract("Failover").Obj(), want: "Failover"},
		{name: "trimmed", in: MakePlaybook("a", "ns").Abstract(" \t Failover \n").Obj(), want: "Failover"},
		{name: "inner space kept", in: MakePlaybook("a", "ns").Abstract(" two  words ").Obj(), want: "two  words"},
		{name: "empty named after the Playbook", in: MakePlaybook("runbook", "ns").Obj(), want: "Playbook runbook"},
		{name: "blank named after the Playbook", in: MakePlaybook("runbook", "ns").Abstract("  ").Obj(), want: "Playbook runbook"},
		{name: "generateName prefix when no name yet", in: MakePlaybook("", "ns").GenerateName("nightly-").Obj(), want: "Playbook nightly"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			DefaultPlaybook(tc.in)
			if diff := cmp.Diff(tc.want, tc.in.Spec.Abstract); diff != "" {
				t.Errorf("abstract (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSpec(t *testing.T) {
	path := field.NewPath("spec")
	cases := []struct {
		name     string
		abstract string
		want     field.ErrorList
	}{
		{name: "ordinary", abstract: "Database failover"},
		{name: "empty", abstract: ""},
		{name: "contains yellow inside a word", abstract: "Yellowstone"},
		{name: "yellow", abstract: "a yellow book", want: field.ErrorList{field.Invalid(path.Child("abstract"), "a yellow book", `must not contain the word "yellow"`)}},
		{name: "YELLOW", abstract: "YELLOW", want: field.ErrorList{field.Invalid(path.Child("abstract"), "YELLOW", `must not contain the word "yellow"`)}},
		{name: "hyphenated", abstract: "yellow-ish", want: field.ErrorList{field.Invalid(path.Child("abstract"), "yellow-ish", `must not contain the word "yellow"`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidateSpec(opsv1.PlaybookSpec{Abstract: tc.abstract}, path)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidatingWebhookFixtures feeds the AdmissionReviews under
// fixtures/admission to the validating handler as the API server would.
func TestValidatingWebhookFixtures(t *testing.T) {
	cases := []struct {
		file      string
		allowed   bool
		code      int32
		mentioned []string
	}{
		{file: "playbook-delete-no-oldobject.yaml", code: 403, mentioned: []string{"no oldObject", "1.15", "default/legacy"}},
		{file: "playbook-delete-protected.yaml", code: 403, mentioned: []string{"spec.deletionProtection is true", `"deletionProtection":false`, "kubectl patch playbook guarded -n default"}},
		{file: "playbook-delete-unprotected.yaml", allowed: true, code: 200},
		{file: "playbook-create-yellow.yaml", code: 422, mentioned: []string{"spec.abstract", `must not contain the word "yellow"`}},
		{file: "playbook-create-ok.yaml", allowed: true, code: 200},
	}
	scheme := runtime.NewScheme()
	if err := opsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	hook := NewValidatingWebhook(scheme)
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			review := readReview(t, tc.file)
			resp := hook.Handle(context.Background(), admission.Request{AdmissionRequest: *review.Request})
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (result %+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if resp.Result == nil || resp.Result.Code != tc.code {
				t.Fatalf("result %+v, want code %d", resp.Result, tc.code)
			}
			for _, m := range tc.mentioned {
				if !strings.Contains(resp.Result.Message, m) {
					t.Errorf("message %q does not mention %q", resp.Result.Message, m)
				}
			}
		})
	}
}

func readReview(t *testing.T, name string) *admissionv1.AdmissionReview {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "admission", name))
	if err != nil {
		t.Fatal(err)
	}
	review := &admissionv1.AdmissionReview{}
	if err := yaml.UnmarshalStrict(data, review); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if review.Request == nil {
		t.Fatalf("%s holds no request", name)
	}
	return review
}
