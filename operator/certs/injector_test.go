package certs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func validatingWith(name string, annotated bool, bundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "v.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: bundle},
		}},
	}
	if annotated {
		v.Annotations = map[string]string{InjectCAAnnotation: "true"}
	}
	return v
}

func mutatingWith(bundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingWebhookConfigurationName, Annotations: map[string]string{InjectCAAnnotation: "true"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "m.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: bundle},
		}},
	}
}

func injectorScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := testScheme(t)
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInjectedWaitsForShippedObjectsOnly: readiness and CA rotation wait
// for the configurations kubeharness ships, never for someone else's
// annotated object.
func TestInjectedWaitsForShippedObjectsOnly(t *testing.T) {
	ca := newTestCA(t, time.Now(), time.Hour)
	current, stale := ca.CertPEM, []byte("stale")
	cases := []struct {
		name    string
		objects []client.Object
		want    bool
	}{
		{
			name: "shipped ones injected, a foreign one stale",
			objects: []client.Object{
				mutatingWith(current),
				validatingWith(ValidatingWebhookConfigurationName, true, current),
				validatingWith("someone-elses", true, stale),
			},
			want: true,
		},
		{
			name: "the shipped validating configuration stale",
			objects: []client.Object{
				mutatingWith(current),
				validatingWith(ValidatingWebhookConfigurationName, true, stale),
			},
			want: false,
		},
		{
			name:    "the shipped mutating configuration stale",
			objects: []client.Object{mutatingWith(stale)},
			want:    false,
		},
		{
			name:    "shipped one not annotated",
			objects: []client.Object{validatingWith(ValidatingWebhookConfigurationName, false, stale)},
			want:    true,
		},
		{
			name:    "nothing installed",
			objects: nil,
			want:    true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(injectorScheme(t)).WithObjects(caSecretFor(ca)).WithObjects(tc.objects...).Build()
			in := &CAInjector{Client: c, Namespace: DefaultNamespace}
			got, err := in.Injected(context.Background(), current)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Injected = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestInjectorReportsForeignFailuresCalmly: an annotated object kubeharness
// does not ship and may not patch gets a Warning Event saying what to do,
// and is retried with growing backoff instead of every two seconds.
func TestInjectorReportsForeignFailuresCalmly(t *testing.T) {
	ca := newTestCA(t, time.Now(), time.Hour)
	forbidden := interceptor.Funcs{Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
			"", nil)
	}, Create: answerReviews(false)}
	foreign := validatingWith("someone-elses", true, nil)
	shipped := validatingWith(ValidatingWebhookConfigurationName, true, nil)
	c := fake.NewClientBuilder().WithScheme(injectorScheme(t)).WithObjects(caSecretFor(ca), foreign, shipped).
		WithInterceptorFuncs(forbidden).Build()
	rec := events.NewFakeRecorder(100)
	in := &CAInjector{Client: c, Namespace: DefaultNamespace, Identity: testManager, Recorder: rec}
	r := &caInjectorFor[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		CAInjector: in, kind: validatingKind, stale: validatingStale, config: validatingConfig,
		new: func() *admissionregistrationv1.ValidatingWebhookConfiguration {
			return &admissionregistrationv1.ValidatingWebhookConfiguration{}
		},
	}
	reconcile := func(name string) ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
		if err != nil {
			t.Fatalf("Reconcile %s: %v", name, err)
		}
		return res
	}

	var delays []time.Duration
	for range 8 {
		delays = append(delays, reconcile(foreign.Name).RequeueAfter)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("retries of a foreign object after %v, want %v", delays, want)
		}
	}
	evs := drainEvents(rec)
	if len(evs) == 0 {
		t.Fatal("no Event on the foreign object")
	}
	for _, want := range []string{"Warning " + ReasonCAInjectionForbidden, "ValidatingWebhookConfiguration someone-elses",
		"verb patch on admissionregistration.k8s.io validatingwebhookconfigurations with resourceNames [someone-elses]",
		testManager, "remove the annotation", "do not wait for it"} {
		if !strings.Contains(evs[0], want) {
			t.Errorf("Event %q does not say %q", evs[0], want)
		}
	}

	if got := reconcile(shipped.Name).RequeueAfter; got != DefaultForbiddenRetry {
		t.Errorf("a shipped configuration is retried after %s, want %s (readiness waits for it)", got, DefaultForbiddenRetry)
	}
	if evs := drainEvents(rec); len(evs) == 0 || !strings.Contains(evs[0], "readiness and CA rotation wait for it") {
		t.Errorf("shipped configuration forbidden: events %q", evs)
	}
}

// answerReviews answers SelfSubjectAccessReviews as the API server would
// for a user who may (or may not) do what they ask; other creates go
// through.
func answerReviews(allowed bool) func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
	return func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if review, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
			review.Status.Allowed = allowed
			return nil
		}
		return c.Create(ctx, obj, opts...)
	}
}

// TestInjectorAsksBeforePatchingForeignObjects: the manager patches an
// annotated object kubeharness does not ship only once a
// SelfSubjectAccessReview allows it, so that it is never denied a request.
func TestInjectorAsksBeforePatchingForeignObjects(t *testing.T) {
	ca := newTestCA(t, time.Now(), time.Hour)
	for _, allowed := range []bool{true, false} {
		var asked []string
		applied := 0
		funcs := interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if review, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
					a := review.Spec.ResourceAttributes
					asked = append(asked, a.Verb+" "+a.Group+" "+a.Resource+" "+a.Name)
				}
				return answerReviews(allowed)(ctx, c, obj, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				applied++
				return c.Apply(ctx, obj, opts...)
			},
		}
		foreign := validatingWith("someone-elses", true, nil)
		c := fake.NewClientBuilder().WithScheme(injectorScheme(t)).WithObjects(caSecretFor(ca), foreign).WithInterceptorFuncs(funcs).Build()
		in := &CAInjector{Client: c, Namespace: DefaultNamespace, Identity: testManager, Recorder: events.NewFakeRecorder(100)}
		r := &caInjectorFor[*admissionregistrationv1.ValidatingWebhookConfiguration]{
			CAInjector: in, kind: validatingKind, stale: validatingStale, config: validatingConfig,
			new: func() *admissionregistrationv1.ValidatingWebhookConfiguration {
				return &admissionregistrationv1.ValidatingWebhookConfiguration{}
			},
		}
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: foreign.Name}}); err != nil {
			t.Fatal(err)
		}
		want := []string{"patch admissionregistration.k8s.io validatingwebhookconfigurations someone-elses"}
		if !slices.Equal(asked, want) {
			t.Errorf("allowed=%t: asked %q, want %q", allowed, asked, want)
		}
		if wantApplied := map[bool]int{true: 1, false: 0}[allowed]; applied != wantApplied {
			t.Errorf("allowed=%t: %d patches sent, want %d", allowed, applied, wantApplied)
		}
	}
}

// TestTrustedHoldsThroughRotation: readiness asks whether the caBundles of
// the shipped configurations verify the served certificate, which holds
// while a rotation publishes old and new CA, and ignores foreign objects.
func TestTrustedHoldsThroughRotation(t *testing.T) {
	now := time.Now()
	oldCA, newCA := newTestCA(t, now, time.Hour), newTestCA(t, now, time.Hour)
	served, err := oldCA.Sign(leafOf(parseRequestOrFail(t, newTestCSR(t, []string{testHost}, nil))), time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	both := MergeBundles(oldCA.CertPEM, newCA.CertPEM)
	cases := []struct {
		name    string
		objects []client.Object
		wantErr string
	}{
		{
			name: "old CA published",
			objects: []client.Object{mutatingWith(oldCA.CertPEM),
				validatingWith(ValidatingWebhookConfigurationName, true, oldCA.CertPEM)},
		},
		{
			name: "old and new CA published, a foreign configuration stale",
			objects: []client.Object{mutatingWith(both),
				validatingWith(ValidatingWebhookConfigurationName, true, oldCA.CertPEM), validatingWith("someone-elses", true, nil)},
		},
		{
			name:    "only the new CA published",
			objects: []client.Object{mutatingWith(newCA.CertPEM)},
			wantErr: "MutatingWebhookConfiguration " + MutatingWebhookConfigurationName + " webhook m.example.com: its caBundle does not verify",
		},
		{
			name:    "nothing injected yet",
			objects: []client.Object{validatingWith(ValidatingWebhookConfigurationName, true, nil)},
			wantErr: "ValidatingWebhookConfiguration " + ValidatingWebhookConfigurationName,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(injectorScheme(t)).WithObjects(tc.objects...).Build()
			in := &CAInjector{Client: c, Namespace: DefaultNamespace}
			checkErr(t, in.Trusted(context.Background(), served, testHost, now), tc.wantErr)
		})
	}
}
