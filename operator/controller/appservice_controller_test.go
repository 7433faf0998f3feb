package controller

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	. "github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, appv1.AddToScheme, opsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// reconcileApp runs one reconcile of the AppService "web" in "shop" over a
// fake API holding objs, and returns the client and what was recorded.
func reconcileApp(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (client.Client, *events.FakeRecorder, ctrl.Result, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&appv1.AppService{}).WithInterceptorFuncs(funcs).Build()
	rec := events.NewFakeRecorder(10)
	r := &AppServiceReconciler{Client: c, Recorder: rec}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}})
	return c, rec, res, err
}

func getApp(t *testing.T, c client.Client) *appv1.AppService {
	t.Helper()
	app := &appv1.AppService{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, app); err != nil {
		t.Fatal(err)
	}
	return app
}

func TestAppServiceCreatesControlledChildren(t *testing.T) {
	app := MakeAppService("web", "shop", "nginx:1.27").Size(3).Env("MODE", "demo").Obj()
	c, _, res, err := reconcileApp(t, interceptor.Funcs{}, app)
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("reconcile = %+v, %v", res, err)
	}
	app = getApp(t, c)
	d, svc := &appsv1.Deployment{}, &corev1.Service{}
	key := client.ObjectKeyFromObject(app)
	if err := c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), key, svc); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{d, svc} {
		if !metav1.IsControlledBy(o, app) {
			t.Errorf("%T is not controlled by the AppService: %+v", o, o.GetOwnerReferences())
		}
	}
	if got := ptr.Deref(d.Spec.Replicas, 0); got != 3 {
		t.Errorf("replicas = %d, want 3", got)
	}
	spec := d.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken || spec.ServiceAccountName != "" {
		t.Errorf("Pods get API access: automount %v, serviceAccountName %q", spec.AutomountServiceAccountToken, spec.ServiceAccountName)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("Service type = %s, want NodePort", svc.Spec.Type)
	}
	if !meta.IsStatusConditionTrue(app.Status.Conditions, ConditionReconciled) {
		t.Errorf("Reconciled is not True: %+v", app.Status.Conditions)
	}
}

func TestAppServiceLeavesObjectsItDoesNotControlAlone(t *testing.T) {
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "7"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			ServiceAccountName: "admin", Containers: []corev1.Container{{Name: "payments", Image: "payments:1"}}}}},
	}
	app := MakeAppService("web", "shop", "miner:1").Size(9).Obj()
	c, rec, res, err := reconcileApp(t, interceptor.Funcs{}, app, foreign)
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("reconcile = %+v, %v; want a reported conflict, not an error or a retry", res, err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(foreign), d); err != nil {
		t.Fatal(err)
	}
	if len(d.OwnerReferences) > 0 || ptr.Deref(d.Spec.Replicas, 0) != 2 || d.Spec.Template.Spec.ServiceAccountName != "admin" ||
		len(d.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("the foreign Deployment was changed: %+v", d)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(foreign), &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Service was created although the Deployment is in the way: %v", err)
	}
	cond := meta.FindStatusCondition(getApp(t, c).Status.Conditions, ConditionReconciled)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonOwnershipConflict || !strings.Contains(cond.Message, "Deployment shop/web") {
		t.Errorf("Reconciled condition = %+v", cond)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, "Warning "+ReasonOwnershipConflict) {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no Warning event recorded")
	}
}

func TestAppServiceReportsARejectedChildAndRetriesCalmly(t *testing.T) {
	rejectService := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Service); ok {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "ports").Index(0).Child("nodePort"), 31234, "provided port is already allocated")})
		}
		return c.Create(ctx, obj, opts...)
	}}
	app := MakeAppService("web", "shop", "nginx:1.27").Obj()
	c, _, res, err := reconcileApp(t, rejectService, app)
	if err != nil {
		t.Fatalf("reconcile returned %v; a refused child is reported, not retried at once", err)
	}
	if res.RequeueAfter != rejectedRetry {
		t.Errorf("requeue after %s, want %s", res.RequeueAfter, rejectedRetry)
	}
	cond := meta.FindStatusCondition(getApp(t, c).Status.Conditions, ConditionReconciled)
	if cond == nil || cond.Reason != ReasonChildRejected || !strings.Contains(cond.Message, "already allocated") {
		t.Errorf("Reconciled condition = %+v", cond)
	}
}

func TestAppServiceRepairsDriftOnItsOwnChildren(t *testing.T) {
	app := MakeAppService("web", "shop", "nginx:1.27").Size(2).Obj()
	c, _, _, err := reconcileApp(t, interceptor.Funcs{}, app)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	if err := c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To[int32](7)
	d.Spec.Template.Spec.ServiceAccountName = "admin"
	d.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
	if err := c.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	r := &AppServiceReconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	if ptr.Deref(d.Spec.Replicas, 0) != 2 || spec.ServiceAccountName != "" || ptr.Deref(spec.AutomountServiceAccountToken, true) {
		t.Errorf("drift not repaired: replicas %v, serviceAccountName %q, automount %v", d.Spec.Replicas, spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
}
