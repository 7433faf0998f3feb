package playbook

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// Paths the webhooks are served on; config/webhook is generated from the
// markers below and must name the same paths.
const (
	MutatePath   = "/mutate-ops-kubeharness-dev-v1-playbook"
	ValidatePath = "/validate-ops-kubeharness-dev-v1-playbook"
)

// forbiddenWord may not appear, as a word and in any case, in an abstract.
var forbiddenWord = regexp.MustCompile(`(?i)\byellow\b`)

// +kubebuilder:webhook:path=/mutate-ops-kubeharness-dev-v1-playbook,mutating=true,failurePolicy=fail,sideEffects=None,groups=ops.kubeharness.dev,resources=playbooks,verbs=create;update,versions=v1,name=mplaybook.kubeharness.dev,admissionReviewVersions=v1,timeoutSeconds=10

// +kubebuilder:webhook:path=/validate-ops-kubeharness-dev-v1-playbook,mutating=false,failurePolicy=fail,sideEffects=None,groups=ops.kubeharness.dev,resources=playbooks,verbs=create;update;delete,versions=v1,name=vplaybook.kubeharness.dev,admissionReviewVersions=v1,timeoutSeconds=10

// Defaulter fills in Playbook defaults.
type Defaulter struct{}

// Validator checks Playbooks on create, update and delete.
type Validator struct{}

var (
	_ admission.Defaulter[*opsv1.Playbook] = Defaulter{}
	_ admission.Validator[*opsv1.Playbook] = Validator{}
)

// SetupWebhookWithManager registers both webhooks on the manager's webhook
// server.
func SetupWebhookWithManager(mgr ctrl.Manager) error {
	s := mgr.GetWebhookServer()
	s.Register(MutatePath, admission.WithDefaulter[*opsv1.Playbook](mgr.GetScheme(), Defaulter{}))
	s.Register(ValidatePath, NewValidatingWebhook(mgr.GetScheme()))
	return nil
}

// NewValidatingWebhook returns the validating webhook. A DELETE review that
// carries no oldObject (API servers before Kubernetes 1.15 sent none) is
// denied with an explanation instead of failing to decode.
func NewValidatingWebhook(scheme *runtime.Scheme) *admission.Webhook {
	inner := admission.WithValidator[*opsv1.Playbook](scheme, Validator{})
	return &admission.Webhook{Handler: requireOldObjectOnDelete(inner.Handler)}
}

// Default trims the abstract and names an empty one after the Playbook. A
// Playbook being deleted is left as it is: the updates it still gets
// (finalizer removal) must not change its spec.
func (Defaulter) Default(_ context.Context, pb *opsv1.Playbook) error {
	if pb.DeletionTimestamp != nil {
		return nil
	}
	DefaultPlaybook(pb)
	return nil
}

// DefaultPlaybook applies the Playbook defaults in place.
func DefaultPlaybook(pb *opsv1.Playbook) {
	pb.Spec.Abstract = strings.TrimSpace(pb.Spec.Abstract)
	if pb.Spec.Abstract != "" {
		return
	}
	name := pb.Name
	if name == "" {
		// generateName is resolved after admission; the prefix is what we know.
		name = strings.TrimRight(pb.GenerateName, "-.")
	}
	// Trimmed as a given abstract is, so that defaulting the result again
	// changes nothing even when there is no name to append.
	pb.Spec.Abstract = strings.TrimSpace("Playbook " + name)
}

// ValidateCreate rejects a forbidden abstract.
func (Validator) ValidateCreate(_ context.Context, pb *opsv1.Playbook) (admission.Warnings, error) {
	return nil, invalid(pb, ValidateSpec(pb.Spec, field.NewPath("spec")))
}

// ValidateUpdate rejects an update that makes the spec break a rule. It
// ratchets, as Kubernetes validation does: a field that breaks a rule but
// is not changed by the update (an object created before the rule) does not
// block the update, so such a Playbook can still be labelled, have its
// finalizer removed and be deleted. A Playbook being deleted is never
// blocked.
func (Validator) ValidateUpdate(_ context.Context, old, pb *opsv1.Playbook) (admission.Warnings, error) {
	if pb.DeletionTimestamp != nil {
		return nil, nil
	}
	return nil, invalid(pb, ValidateSpecUpdate(pb.Spec, old.Spec, field.NewPath("spec")))
}

// ValidateDelete denies deleting a protected Playbook.
func (Validator) ValidateDelete(_ context.Context, pb *opsv1.Playbook) (admission.Warnings, error) {
	if !pb.Spec.DeletionProtection {
		return nil, nil
	}
	return nil, apierrors.NewForbidden(opsv1.GroupVersion.WithResource("playbooks").GroupResource(), pb.Name,
		fmt.Errorf("spec.deletionProtection is true; to delete it, lift the protection first: "+
			`kubectl patch playbook %s -n %s --type=merge -p '{"spec":{"deletionProtection":false}}'. `+
			"Until then namespace %s cannot finish deleting either", pb.Name, pb.Namespace, pb.Namespace))
}

// ValidateSpec is the Playbook spec rule: the abstract must not contain the
// word "yellow" in any case.
func ValidateSpec(spec opsv1.PlaybookSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if forbiddenWord.MatchString(spec.Abstract) {
		errs = append(errs, field.Invalid(path.Child("abstract"), shorten(spec.Abstract), `must not contain the word "yellow"`))
	}
	return errs
}

// ValidateSpecUpdate is ValidateSpec for an update from old: only fields
// the update changes are held to the rules.
func ValidateSpecUpdate(spec, old opsv1.PlaybookSpec, path *field.Path) field.ErrorList {
	if spec.Abstract == old.Abstract {
		return nil // the only field with a rule is unchanged
	}
	return ValidateSpec(spec, path)
}

// echoLimit bounds how much of a rejected value a denial repeats.
const echoLimit = 64

// shorten cuts s for echoing in a denial, at a rune boundary, saying how
// long it was.
func shorten(s string) string {
	if len(s) <= echoLimit {
		return s
	}
	cut := echoLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

func invalid(pb *opsv1.Playbook, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(opsv1.GroupVersion.WithKind("Playbook").GroupKind(), pb.Name, errs)
}

func requireOldObjectOnDelete(next admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation == admissionv1.Delete && len(req.OldObject.Raw) == 0 && req.OldObject.Object == nil {
			return admission.Denied(fmt.Sprintf("DELETE of Playbook %s/%s: the admission review carries no oldObject, "+
				"so spec.deletionProtection cannot be checked; validating Playbook deletion needs Kubernetes 1.15 or newer",
				req.Namespace, req.Name))
		}
		return next.Handle(ctx, req)
	})
}
