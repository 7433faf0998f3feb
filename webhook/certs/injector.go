package certs

import (
	"bytes"
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1ac "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Injector keeps caBundle equal to the CA Secret's published bundle in
// every webhook configuration and CRD conversion webhook annotated
// kubeharness.dev/inject-ca: "true". It applies only the caBundle fields
// with server-side apply, so it never fights other owners over the rest, and
// it never modifies objects from the cache.
type Injector struct {
	client.Client
	Namespace string
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=kubeharness-mutating-webhook-configuration,verbs=patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=kubeharness-validating-webhook-configuration,verbs=patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=playbooks.ops.kubeharness.dev,verbs=patch

func annotated(o client.Object) bool { return o.GetAnnotations()[InjectAnnotation] == "true" }

// desired returns the bundle to publish, or nil when there is no CA yet.
func (in *Injector) desired(ctx context.Context) ([]byte, error) {
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

type injectorFor[T client.Object] struct {
	*Injector
	new    func() T
	stale  func(obj T, bundle []byte) bool
	config func(obj T, bundle []byte) runtime.ApplyConfiguration
}

func (r *injectorFor[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.new()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !annotated(obj) {
		return ctrl.Result{}, nil
	}
	want, err := r.desired(ctx)
	if err != nil || want == nil || !r.stale(obj, want) {
		return ctrl.Result{}, err
	}
	ac := r.config(obj, want)
	if ac == nil {
		return ctrl.Result{}, nil // nothing to inject into (a CRD without a conversion webhook)
	}
	if err := r.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsForbidden(err) {
			// RBAC fixes take effect at once; look again at a steady pace.
			ctrl.LoggerFrom(ctx).Error(err, "injecting caBundle is forbidden; grant the manager patch on this object (config/rbac)",
				"kind", fmt.Sprintf("%T", obj), "name", req.Name)
			return ctrl.Result{RequeueAfter: forbiddenRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("injecting caBundle into %T %s: %w", obj, req.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("injected caBundle", "kind", fmt.Sprintf("%T", obj), "name", req.Name)
	return ctrl.Result{}, nil
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

// Injected reports whether every annotated object publishes bundle.
func (in *Injector) Injected(ctx context.Context, b []byte) (bool, error) {
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := in.List(ctx, mutating); err != nil {
		return false, err
	}
	for i := range mutating.Items {
		if annotated(&mutating.Items[i]) && mutatingStale(&mutating.Items[i], b) {
			return false, nil
		}
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := in.List(ctx, validating); err != nil {
		return false, err
	}
	for i := range validating.Items {
		if annotated(&validating.Items[i]) && validatingStale(&validating.Items[i], b) {
			return false, nil
		}
	}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := in.List(ctx, crds); err != nil {
		return false, err
	}
	for i := range crds.Items {
		if annotated(&crds.Items[i]) && crdStale(&crds.Items[i], b) {
			return false, nil
		}
	}
	return true, nil
}

// SetupWithManager registers one controller per kind. A change of the CA
// Secret re-checks every annotated object of the kind.
func (in *Injector) SetupWithManager(mgr ctrl.Manager) error {
	if err := setupInjector(mgr, in, "cainjector-mutating", func() *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	}, &admissionregistrationv1.MutatingWebhookConfigurationList{}, mutatingStale, mutatingConfig); err != nil {
		return err
	}
	if err := setupInjector(mgr, in, "cainjector-validating", func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}
	}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}, validatingStale, validatingConfig); err != nil {
		return err
	}
	return setupInjector(mgr, in, "cainjector-crd", func() *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{}
	}, &apiextensionsv1.CustomResourceDefinitionList{}, crdStale, crdConfig)
}

func setupInjector[T client.Object](mgr ctrl.Manager, in *Injector, name string, newObj func() T, list client.ObjectList,
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
		Complete(&injectorFor[T]{Injector: in, new: newObj, stale: stale, config: config})
}
