package playbook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		// Defaulting its own result again must change nothing.
		{name: "neither name nor generateName", in: MakePlaybook("", "ns").Obj(), want: "Playbook"},
		{name: "generateName of separators only", in: MakePlaybook("", "ns").GenerateName("-").Obj(), want: "Playbook"},
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

// TestValidateUpdateRatchets: an object that breaks a rule it predates can
// still be updated as long as the update leaves the offending field alone,
// and is never blocked while it is being deleted.
func TestValidateUpdateRatchets(t *testing.T) {
	legacy := MakePlaybook("legacy", "ns").Abstract("a yellow book").Obj()
	labelled := legacy.DeepCopy()
	labelled.Labels = map[string]string{"team": "ops"}
	unfinalized := legacy.DeepCopy()
	unfinalized.Finalizers = nil
	now := metav1.Now()
	deleting := legacy.DeepCopy()
	deleting.DeletionTimestamp = &now
	deletingChanged := deleting.DeepCopy()
	deletingChanged.Spec.Abstract = "YELLOW"
	worse := legacy.DeepCopy()
	worse.Spec.Abstract = "a yellow yellow book"
	fixed := legacy.DeepCopy()
	fixed.Spec.Abstract = "a blue book"
	madeInvalid := fixed.DeepCopy()
	madeInvalid.Spec.Abstract = "yellow"

	cases := []struct {
		name     string
		old, new *opsv1.Playbook
		allowed  bool
	}{
		{name: "metadata-only update of an object that predates the rule", old: legacy, new: labelled, allowed: true},
		{name: "finalizer removal", old: legacy, new: unfinalized, allowed: true},
		{name: "any update while being deleted", old: deleting, new: deletingChanged, allowed: true},
		{name: "changing the offending field to another offending value", old: legacy, new: worse},
		{name: "fixing the offending field", old: legacy, new: fixed, allowed: true},
		{name: "making a valid field invalid", old: fixed, new: madeInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validator{}.ValidateUpdate(context.Background(), tc.old, tc.new)
			if (err == nil) != tc.allowed {
				t.Fatalf("allowed = %v, want %v (err %v)", err == nil, tc.allowed, err)
			}
		})
	}
}

func TestDefaultLeavesDeletedPlaybookAlone(t *testing.T) {
	now := metav1.Now()
	pb := MakePlaybook("going", "ns").Abstract("  spaced  ").Obj()
	pb.DeletionTimestamp = &now
	if err := (Defaulter{}).Default(context.Background(), pb); err != nil {
		t.Fatal(err)
	}
	if pb.Spec.Abstract != "  spaced  " {
		t.Errorf("abstract of a Playbook being deleted changed to %q", pb.Spec.Abstract)
	}
}

func TestDenialEchoesABoundedValue(t *testing.T) {
	huge := "yellow " + strings.Repeat("é", 300000)
	_, err := Validator{}.ValidateCreate(context.Background(), MakePlaybook("huge", "ns").Abstract(huge).Obj())
	if err == nil {
		t.Fatal("a yellow abstract was allowed")
	}
	msg := err.Error()
	if len(msg) > 1024 {
		t.Errorf("the denial is %d bytes long; it must not echo the whole abstract", len(msg))
	}
	for _, want := range []string{"spec.abstract", `must not contain the word "yellow"`, fmt.Sprintf("(%d bytes)", len(huge))} {
		if !strings.Contains(msg, want) {
			t.Errorf("denial %q does not mention %q", msg, want)
		}
	}
	if !utf8.ValidString(msg) {
		t.Errorf("denial is not valid UTF-8: the value was cut inside a character")
	}
}

func TestDeleteDenialNamesTheNamespace(t *testing.T) {
	_, err := Validator{}.ValidateDelete(context.Background(), MakePlaybook("guarded", "team-a").Protected(true).Obj())
	if err == nil || !strings.Contains(err.Error(), "namespace team-a cannot finish deleting") {
		t.Errorf("denial %v does not say that the namespace's deletion waits for it", err)
	}
}
