package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1ac "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// CAInjector keeps caBundle equal to the CA Secret's published bundle in
// every webhook configuration and CRD conversion webhook annotated
// kubeharness.dev/inject-ca: "true". It applies only the caBundle fields
// with server-side apply, so it never fights other owners over the rest, and
// it never modifies objects from the cache.
//
// The objects kubeharness ships (names.go) are what readiness and CA
// rotation wait for. Any other annotated object is injected best-effort:
// when that fails (the manager may not patch it, say) a Warning Event on it
// and a log line say why and what to do, it is retried with backoff, and it
// never holds up the manager's readiness or a CA rotation.
type CAInjector struct {
	client.Client
	Namespace string
	// Identity is the manager's username, for messages.
	Identity string
	Recorder events.EventRecorder
	// ForbiddenRetry is how often an injection the manager may not make is
	// tried again; zero means DefaultForbiddenRetry.
	ForbiddenRetry time.Duration

	retriesOnce sync.Once
	retries     workqueue.TypedRateLimiter[string]
}

// Event reasons the injector records on the object it injects into.
const (
	// ReasonCAInjectionForbidden: the manager may not patch the object.
	ReasonCAInjectionForbidden = "CAInjectionForbidden"
	// ReasonCAInjectionFailed: patching the object failed otherwise.
	ReasonCAInjectionFailed = "CAInjectionFailed"
)

// Backoff of best-effort injection into objects kubeharness does not ship:
// soon after a fix (a new RBAC grant is not an event the injector sees),
// calm while nothing changes. A CA change or an edit of the object makes
// it try again at once.
const (
	foreignRetryBase = 5 * time.Second
	foreignRetryMax  = 5 * time.Minute
)

func (in *CAInjector) foreignRetries() workqueue.TypedRateLimiter[string] {
	in.retriesOnce.Do(func() {
		in.retries = workqueue.NewTypedItemExponentialFailureRateLimiter[string](foreignRetryBase, foreignRetryMax)
	})
	return in.retries
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=kubeharness-mutating-webhook-configuration,verbs=patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=kubeharness-validating-webhook-configuration,verbs=patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=playbooks.ops.kubeharness.dev,verbs=patch

func annotated(o client.Object) bool { return o.GetAnnotations()[InjectCAAnnotation] == "true" }

// desired returns the bundle to publish, or nil when there is no CA yet.
func (in *CAInjector) desired(ctx context.Context) ([]byte, error) {
	secret := &corev1.Secret{}
	err := in.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: CASecretName}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return bundle(secret), nil
}

type caInjectorFor[T client.Object] struct {
	*CAInjector
	kind
	new    func() T
	stale  func(obj T, bundle []byte) bool
	config func(obj T, bundle []byte) runtime.ApplyConfiguration
}

// kind names a kind the injector handles, and which of its objects
// kubeharness ships.
type kind struct {
	Kind, Group, Resource string
	Shipped               []string
}

var (
	mutatingKind = kind{
		Kind: "MutatingWebhookConfiguration", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations",
		Shipped: []string{MutatingWebhookConfigurationName},
	}
	validatingKind = kind{
		Kind: "ValidatingWebhookConfiguration", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations",
		Shipped: []string{ValidatingWebhookConfigurationName},
	}
	crdKind = kind{
		Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
		Shipped: []string{PlaybookCRDName},
	}
)

func (r *caInjectorFor[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.new()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.foreignRetries().Forget(r.Kind + "/" + req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !annotated(obj) {
		r.foreignRetries().Forget(r.Kind + "/" + req.Name)
		return ctrl.Result{}, nil
	}
	want, err := r.desired(ctx)
	if err != nil || want == nil {
		return ctrl.Result{}, err
	}
	if !r.stale(obj, want) {
		r.foreignRetries().Forget(r.Kind + "/" + req.Name)
		return ctrl.Result{}, nil
	}
	ac := r.config(obj, want)
	if ac == nil {
		return ctrl.Result{}, nil // nothing to inject into (a CRD without a conversion webhook)
	}
	key := r.Kind + "/" + req.Name
	shipped := slices.Contains(r.Shipped, req.Name)
	if shipped {
		err = r.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership)
	} else {
		err = r.applyIfAllowed(ctx, req.Name, ac)
	}
	if err == nil {
		r.foreignRetries().Forget(key)
		ctrl.LoggerFrom(ctx).Info("injected caBundle", "kind", r.Kind, "name", req.Name)
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("kind", r.Kind, "name", req.Name)
	grant := fmt.Sprintf("grant the manager's ServiceAccount (%s) verb patch on %s %s with resourceNames [%s] (config/rbac)",
		r.Identity, r.Group, r.Resource, req.Name)
	if shipped {
		// Readiness and rotation wait for this one: config/rbac is broken.
		if apierrors.IsForbidden(err) {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonCAInjectionForbidden, "InjectCA",
				"the manager may not patch the caBundle of %s %s, which kubeharness ships: %s; readiness and CA rotation wait for it",
				r.Kind, req.Name, grant)
			log.Error(err, "injecting caBundle is forbidden", "fix", grant)
			// RBAC fixes take effect at once; look again at a steady pace.
			return ctrl.Result{RequeueAfter: forbiddenRetryOr(r.ForbiddenRetry)}, nil
		}
		return ctrl.Result{}, fmt.Errorf("injecting caBundle into %s %s: %w", r.Kind, req.Name, err)
	}
	// Not kubeharness's own: best-effort, never blocking.
	retry := r.foreignRetries().When(key)
	reason, what := ReasonCAInjectionFailed, fmt.Sprintf("injecting kubeharness's CA into its caBundle failed: %v", err)
	if apierrors.IsForbidden(err) {
		reason = ReasonCAInjectionForbidden
		what = fmt.Sprintf("it is annotated %s=true but the manager may not patch it, so its caBundle does not follow "+
			"kubeharness's CA. Fix: %s, or remove the annotation if it should not trust kubeharness's CA", InjectCAAnnotation, grant)
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "InjectCA",
		"%s %s: %s. kubeharness's own readiness and CA rotation do not wait for it; retrying with backoff up to %s",
		r.Kind, req.Name, what, foreignRetryMax)
	log.Info("caBundle not injected into an object kubeharness does not ship; it does not block readiness or rotation",
		"reason", reason, "error", err.Error(), "retryIn", retry)
	return ctrl.Result{RequeueAfter: retry}, nil
}

// applyIfAllowed applies ac to name, an object kubeharness does not ship,
// once a SelfSubjectAccessReview says the manager may patch it. config/rbac
// grants patch on the shipped objects only, so the manager asks first
// rather than be denied: a denied request is what audits and alerts look
// for, a question is not.
func (r *caInjectorFor[T]) applyIfAllowed(ctx context.Context, name string, ac runtime.ApplyConfiguration) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Group: r.Group, Resource: r.Resource, Name: name},
	}}
	if err := r.Create(ctx, review); err != nil {
		return fmt.Errorf("asking whether the manager may patch it (SelfSubjectAccessReview): %w", err)
	}
	if !review.Status.Allowed {
		why := "RBAC allows no patch of it"
		if review.Status.Reason != "" {
			why = review.Status.Reason
		}
		return apierrors.NewForbidden(schema.GroupResource{Group: r.Group, Resource: r.Resource}, name, errors.New(why))
	}
	return r.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership)
}

func mutatingStale(o *admissionregistrationv1.MutatingWebhookConfiguration, b []byte) bool {
	for _, w := range o.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, b) {
			return true
		}
	}
	return false
}

func validatingStale(o *admissionregistrationv1.ValidatingWebhookConfiguration, b []byte) bool {
	for _, w := range o.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, b) {
			return true
		}
	}
	return false
}

func crdStale(o *apiextensionsv1.CustomResourceDefinition, b []byte) bool {
	c := o.Spec.Conversion
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil &&
		!bytes.Equal(c.Webhook.ClientConfig.CABundle, b)
}

func mutatingConfig(o *admissionregistrationv1.MutatingWebhookConfiguration, b []byte) runtime.ApplyConfiguration {
	ac := admissionregistrationv1ac.MutatingWebhookConfiguration(o.Name)
	for _, w := range o.Webhooks {
		ac.WithWebhooks(admissionregistrationv1ac.MutatingWebhook().WithName(w.Name).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(b...)))
	}
	return ac
}

func validatingConfig(o *admissionregistrationv1.ValidatingWebhookConfiguration, b []byte) runtime.ApplyConfiguration {
	ac := admissionregistrationv1ac.ValidatingWebhookConfiguration(o.Name)
	for _, w := range o.Webhooks {
		ac.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(w.Name).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(b...)))
	}
	return ac
}

func crdConfig(o *apiextensionsv1.CustomResourceDefinition, b []byte) runtime.ApplyConfiguration {
	c := o.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return nil
	}
	return apiextensionsv1ac.CustomResourceDefinition(o.Name).WithSpec(apiextensionsv1ac.CustomResourceDefinitionSpec().
		WithConversion(apiextensionsv1ac.CustomResourceConversion().WithStrategy(apiextensionsv1.WebhookConverter).
			WithWebhook(apiextensionsv1ac.WebhookConversion().
				WithClientConfig(apiextensionsv1ac.WebhookClientConfig().WithCABundle(b...)))))
}

// Injected reports whether the webhook configurations and CRDs kubeharness
// ships publish bundle, where they exist and are annotated. Other annotated
// objects are not waited for: one the manager may not patch must not stall
// a CA rotation or make every replica unready.
func (in *CAInjector) Injected(ctx context.Context, b []byte) (bool, error) {
	bundles, err := in.shippedBundles(ctx)
	if err != nil {
		return false, err
	}
	for _, sb := range bundles {
		if !bytes.Equal(sb.bundle, b) {
			return false, nil
		}
	}
	return true, nil
}

// Trusted returns nil when the caBundle of every webhook of the annotated
// webhook configurations and CRDs kubeharness ships verifies leafPEM for
// host at now: the API server trusts the served certificate. Unlike
// Injected it holds through every step of a CA rotation, whose bundles
// carry the old and the new CA while the serving certificate switches.
func (in *CAInjector) Trusted(ctx context.Context, leafPEM []byte, host string, now time.Time) error {
	bundles, err := in.shippedBundles(ctx)
	if err != nil {
		return err
	}
	for _, sb := range bundles {
		if err := VerifyServing(leafPEM, sb.bundle, host, now); err != nil {
			return fmt.Errorf("%s: its caBundle does not verify the served certificate: %w", sb.where, err)
		}
	}
	return nil
}

type shippedBundle struct {
	where  string
	bundle []byte
}

// shippedBundles lists the caBundles of the annotated objects kubeharness
// ships that exist: each webhook's, and a CRD's conversion webhook's.
func (in *CAInjector) shippedBundles(ctx context.Context) ([]shippedBundle, error) {
	var out []shippedBundle
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if ok, err := in.getShipped(ctx, MutatingWebhookConfigurationName, m); err != nil {
		return nil, err
	} else if ok {
		for _, w := range m.Webhooks {
			out = append(out, shippedBundle{fmt.Sprintf("MutatingWebhookConfiguration %s webhook %s", m.Name, w.Name), w.ClientConfig.CABundle})
		}
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if ok, err := in.getShipped(ctx, ValidatingWebhookConfigurationName, v); err != nil {
		return nil, err
	} else if ok {
		for _, w := range v.Webhooks {
			out = append(out, shippedBundle{fmt.Sprintf("ValidatingWebhookConfiguration %s webhook %s", v.Name, w.Name), w.ClientConfig.CABundle})
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if ok, err := in.getShipped(ctx, PlaybookCRDName, crd); err != nil {
		return nil, err
	} else if c := crd.Spec.Conversion; ok && c != nil && c.Strategy == apiextensionsv1.WebhookConverter &&
		c.Webhook != nil && c.Webhook.ClientConfig != nil {
		out = append(out, shippedBundle{"CustomResourceDefinition " + crd.Name + " conversion webhook", c.Webhook.ClientConfig.CABundle})
	}
	return out, nil
}

// getShipped reads a shipped object into obj and reports whether it exists
// and asks for injection.
func (in *CAInjector) getShipped(ctx context.Context, name string, obj client.Object) (bool, error) {
	err := in.Get(ctx, types.NamespacedName{Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // not installed: nothing to wait for
	case err != nil:
		return false, err
	}
	return annotated(obj), nil
}

// SetupWithManager registers one controller per kind. A change of the CA
// Secret re-checks every annotated object of the kind.
func (in *CAInjector) SetupWithManager(mgr ctrl.Manager) error {
	if err := setupCAInjector(mgr, in, "cainjector-mutating", mutatingKind, func() *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	}, &admissionregistrationv1.MutatingWebhookConfigurationList{}, mutatingStale, mutatingConfig); err != nil {
		return err
	}
	if err := setupCAInjector(mgr, in, "cainjector-validating", validatingKind, func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}
	}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}, validatingStale, validatingConfig); err != nil {
		return err
	}
	return setupCAInjector(mgr, in, "cainjector-crd", crdKind, func() *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{}
	}, &apiextensionsv1.CustomResourceDefinitionList{}, crdStale, crdConfig)
}

func setupCAInjector[T client.Object](mgr ctrl.Manager, in *CAInjector, name string, k kind, newObj func() T, list client.ObjectList,
	stale func(T, []byte) bool, config func(T, []byte) runtime.ApplyConfiguration) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := in.List(ctx, l); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if co, ok := o.(client.Object); ok && annotated(co) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: co.GetName()}})
			}
			return nil
		})
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(newObj(), builder.WithPredicates(predicate.NewPredicateFuncs(annotated))).
		Watches(&corev1.Secret{}, all, builder.WithPredicates(namePredicate(in.Namespace, CASecretName))).
		Complete(&caInjectorFor[T]{CAInjector: in, kind: k, new: newObj, stale: stale, config: config})
}
