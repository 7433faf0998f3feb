// Package appservice holds the AppService validating webhook. It enforces
// what the schema cannot: specs the controller could realise (ValidateSpec),
// and that an AppService may reference in spec.envs only the Secrets and
// ConfigMaps its author may read. The operator creates
// the Deployment whose Pods read them, with more privilege than the author
// has; without this rule, the right to create AppServices would be the right
// to read every Secret in the namespace.
package appservice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// ValidatePath is where the webhook is served; config/webhook is generated
// from the marker below and must name the same path.
const ValidatePath = "/validate-app-kubeharness-dev-v1-appservice"

// +kubebuilder:webhook:path=/validate-app-kubeharness-dev-v1-appservice,mutating=false,failurePolicy=fail,sideEffects=None,groups=app.kubeharness.dev,resources=appservices,verbs=create;update,versions=v1,name=vappservice.kubeharness.dev,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Authorizer answers whether user may do attrs: a SubjectAccessReview.
type Authorizer func(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (allowed bool, reason string, err error)

// Validator checks the references of an AppService's spec against its
// author's permissions.
type Validator struct {
	Authorize Authorizer
	decoder   admission.Decoder
}

var _ admission.Handler = &Validator{}

// NewValidator returns a Validator decoding AppServices with scheme.
func NewValidator(scheme *runtime.Scheme, authorize Authorizer) *Validator {
	return &Validator{Authorize: authorize, decoder: admission.NewDecoder(scheme)}
}

// SetupWebhookWithManager registers the webhook; it asks the API server
// with SubjectAccessReviews.
func SetupWebhookWithManager(mgr ctrl.Manager) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(ValidatePath, &admission.Webhook{Handler: NewValidator(mgr.GetScheme(), SubjectAccessReview(cs))})
	return nil
}

// SubjectAccessReview is an Authorizer asking the API server.
func SubjectAccessReview(cs kubernetes.Interface) Authorizer {
	return func(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra, ResourceAttributes: &attrs,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, "", err
		}
		return review.Status.Allowed, review.Status.Reason, nil
	}
}

// Handle allows a valid AppService whose author may read everything its
// envs reference. An update that leaves the spec as it was (labels,
// annotations, finalizers, status) is not checked again: it grants nothing
// new, and an object that predates a rule can still be relabelled and
// deleted.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	// The API server hands a custom resource over as its author wrote it,
	// quantities included, and some it cannot afford to parse.
	if errs := safequantity.CheckJSON(req.Object.Raw, quantityPaths...); len(errs) > 0 {
		status := apierrors.NewInvalid(appv1.GroupVersion.WithKind("AppService").GroupKind(), req.Name, errs).Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	if req.Operation == admissionv1.Update {
		if errs := safequantity.CheckJSON(req.OldObject.Raw, quantityPaths...); len(errs) > 0 {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("the stored AppService: %w", errs.ToAggregate()))
		}
	}
	app := &appv1.AppService{}
	if err := v.decoder.DecodeRaw(req.Object, app); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the AppService: %w", err))
	}
	if req.Operation == admissionv1.Update {
		old := &appv1.AppService{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old AppService: %w", err))
		}
		if equality.Semantic.DeepEqual(old.Spec, app.Spec) {
			return admission.Allowed("spec unchanged")
		}
	}
	errs := ValidateSpec(app.Spec, field.NewPath("spec"))
	// Every reference is checked on every spec change, not only new ones:
	// whoever changes the image decides what code reads them.
	refErrs, err := v.checkReferences(ctx, req.UserInfo, req.Namespace, app)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("checking what the AppService references: %w", err))
	}
	if errs = append(errs, refErrs...); len(errs) > 0 {
		status := apierrors.NewInvalid(appv1.GroupVersion.WithKind("AppService").GroupKind(), app.Name, errs).Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	return admission.Allowed("")
}

// quantityPaths are where an AppService holds resource quantities, for
// safequantity.CheckJSON.
var quantityPaths = [][]string{
	{"spec", "resources", "limits", "*"},
	{"spec", "resources", "requests", "*"},
	{"spec", "envs", "*", "valueFrom", "resourceFieldRef", "divisor"},
}

// ValidateSpec holds an AppService spec to what its Deployment and Service
// can realise, the rules the schema cannot afford (CEL's cost budget
// refuses per-item string rules on ServicePort, whose fields carry no
// length bounds): port names that are IANA service names, unique and
// present when there are several ports, targetPorts that are port numbers
// or the port's own name (the container port is named after it), unique
// nodePorts, and requests no greater than their limits.
func ValidateSpec(spec appv1.AppServiceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names, nodePorts := map[string]bool{}, map[int32]bool{}
	for i, p := range spec.Ports {
		pp := path.Child("ports").Index(i)
		switch {
		case p.Name == "" && len(spec.Ports) > 1:
			errs = append(errs, field.Required(pp.Child("name"), "when there is more than one port, every port needs a name"))
		case p.Name != "":
			for _, msg := range validation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		switch tp := p.TargetPort; {
		case tp.Type == intstr.Int && tp.IntVal != 0:
			for _, msg := range validation.IsValidPortNum(int(tp.IntVal)) {
				errs = append(errs, field.Invalid(pp.Child("targetPort"), tp.IntVal, msg))
			}
		case tp.Type == intstr.String && tp.StrVal != p.Name:
			errs = append(errs, field.Invalid(pp.Child("targetPort"), tp.StrVal,
				fmt.Sprintf("a named targetPort must be the port's own name (%q): the container port is named after the port", p.Name)))
		}
		if p.NodePort != 0 {
			if nodePorts[p.NodePort] {
				errs = append(errs, field.Duplicate(pp.Child("nodePort"), p.NodePort))
			}
			nodePorts[p.NodePort] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Resources.Requests)) {
		req := spec.Resources.Requests[name]
		if limit, ok := spec.Resources.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("resources", "requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit %s", name, limit.String())))
		}
	}
	return errs
}

func (v *Validator) checkReferences(ctx context.Context, user authenticationv1.UserInfo, namespace string, app *appv1.AppService) (field.ErrorList, error) {
	var errs field.ErrorList
	var failed []error
	for i, env := range app.Spec.Envs {
		if env.ValueFrom == nil {
			continue
		}
		path := field.NewPath("spec", "envs").Index(i).Child("valueFrom")
		var resource, kind, name string
		switch {
		case env.ValueFrom.SecretKeyRef != nil:
			resource, kind, name, path = "secrets", "Secret", env.ValueFrom.SecretKeyRef.Name, path.Child("secretKeyRef", "name")
		case env.ValueFrom.ConfigMapKeyRef != nil:
			resource, kind, name, path = "configmaps", "ConfigMap", env.ValueFrom.ConfigMapKeyRef.Name, path.Child("configMapKeyRef", "name")
		default:
			continue // fieldRef and resourceFieldRef read the Pod itself
		}
		allowed, reason, err := v.Authorize(ctx, user, authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "get", Resource: resource, Name: name,
		})
		if err != nil {
			failed = append(failed, err)
			continue
		}
		if !allowed {
			msg := fmt.Sprintf("%s may not get %s %s/%s, so an AppService of theirs may not read it either", user.Username, kind, namespace, name)
			if reason != "" {
				msg += " (" + reason + ")"
			}
			errs = append(errs, field.Forbidden(path, msg))
		}
	}
	return errs, errors.Join(failed...)
}
