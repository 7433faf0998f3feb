package appservice

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	. "github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
)

// readable is an Authorizer under which user may get exactly the objects
// listed as "resource/name".
func readable(allowed ...string) (Authorizer, *[]string) {
	var asked []string
	return func(_ context.Context, user authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, string, error) {
		key := a.Resource + "/" + a.Name
		asked = append(asked, user.Username+" "+a.Verb+" "+a.Namespace+"/"+key)
		for _, k := range allowed {
			if k == key {
				return true, "", nil
			}
		}
		return false, "no RBAC rule allows it", nil
	}, &asked
}

func request(t *testing.T, op admissionv1.Operation, app, old *appv1.AppService) admission.Request {
	t.Helper()
	raw := func(a *appv1.AppService) runtime.RawExtension {
		if a == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Namespace: app.Namespace, Name: app.Name,
		UserInfo: authenticationv1.UserInfo{Username: "mallory", Groups: []string{"system:authenticated"}},
		Object:   raw(app), OldObject: raw(old),
	}}
}

func withEnv(app *appv1.AppService, envs ...corev1.EnvVar) *appv1.AppService {
	app.Spec.Envs = envs
	return app
}

var (
	fromSecret = corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}
	fromConfigMap = corev1.EnvVar{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}}
	fromField = corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	literal   = corev1.EnvVar{Name: "LEVEL", Value: "debug"}
)

func TestReferences(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	base := func() *appv1.AppService { return MakeAppService("web", "shop", "nginx:1.27").Obj() }
	cases := []struct {
		name      string
		readable  []string
		op        admissionv1.Operation
		app, old  *appv1.AppService
		allowed   bool
		mentioned []string
		asked     int
	}{
		{name: "literal and downward-API values need nothing", op: admissionv1.Create, app: withEnv(base(), literal, fromField), allowed: true},
		{name: "a Secret the author may not read", op: admissionv1.Create, app: withEnv(base(), literal, fromSecret), asked: 1,
			mentioned: []string{"spec.envs[1].valueFrom.secretKeyRef.name", "mallory may not get Secret shop/db", "no RBAC rule allows it"}},
		{name: "a ConfigMap the author may not read", op: admissionv1.Create, app: withEnv(base(), fromConfigMap), asked: 1,
			mentioned: []string{"spec.envs[0].valueFrom.configMapKeyRef.name", "ConfigMap shop/settings"}},
		{name: "a Secret the author may read", readable: []string{"secrets/db"}, op: admissionv1.Create, app: withEnv(base(), fromSecret), allowed: true, asked: 1},
		{name: "every forbidden reference is named", op: admissionv1.Create, app: withEnv(base(), fromSecret, fromConfigMap), asked: 2,
			mentioned: []string{"spec.envs[0]", "spec.envs[1]"}},
		{name: "a spec change re-checks references already there", op: admissionv1.Update, asked: 1,
			old: withEnv(base(), fromSecret), app: func() *appv1.AppService { a := withEnv(base(), fromSecret); a.Spec.Image = "miner:1"; return a }(),
			mentioned: []string{"may not get Secret shop/db"}},
		{name: "a metadata-only update is not checked", op: admissionv1.Update, allowed: true,
			old: withEnv(base(), fromSecret), app: func() *appv1.AppService {
				a := withEnv(base(), fromSecret)
				a.Labels = map[string]string{"a": "b"}
				return a
			}()},
		{name: "delete is not checked", op: admissionv1.Delete, app: withEnv(base(), fromSecret), allowed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authorize, asked := readable(tc.readable...)
			v := NewValidator(scheme, authorize)
			resp := v.Handle(context.Background(), request(t, tc.op, tc.app, tc.old))
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			for _, m := range tc.mentioned {
				if !strings.Contains(resp.Result.Message, m) {
					t.Errorf("message %q does not mention %q", resp.Result.Message, m)
				}
			}
			if len(*asked) != tc.asked {
				t.Errorf("asked the authorizer %d times (%v), want %d", len(*asked), *asked, tc.asked)
			}
		})
	}
}

func TestValidateSpec(t *testing.T) {
	port := func(name string, n int32) corev1.ServicePort { return corev1.ServicePort{Name: name, Port: n} }
	cases := []struct {
		name  string
		edit  func(*appv1.AppService)
		field string // empty: valid
		says  string
	}{
		{name: "one unnamed port", edit: func(a *appv1.AppService) { a.Spec.Ports = []corev1.ServicePort{{Port: 80}} }},
		{name: "named targetPort naming its own port", edit: func(a *appv1.AppService) {
			a.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}
		}},
		{name: "request equal to its limit", edit: func(a *appv1.AppService) {
			a.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")}}
		}},
		{name: "targetPort out of range", edit: func(a *appv1.AppService) { a.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) },
			field: "spec.ports[0].targetPort", says: "between 1 and 65535"},
		{name: "targetPort naming another port", edit: func(a *appv1.AppService) { a.Spec.Ports[0].TargetPort = intstr.FromString("admin") },
			field: "spec.ports[0].targetPort", says: "the port's own name"},
		{name: "port name over 15 characters", edit: func(a *appv1.AppService) { a.Spec.Ports[0].Name = "a-very-long-port-name" },
			field: "spec.ports[0].name", says: "no more than 15 characters"},
		{name: "upper-case port name", edit: func(a *appv1.AppService) { a.Spec.Ports[0].Name = "HTTP" },
			field: "spec.ports[0].name", says: "alpha-numeric"},
		{name: "two unnamed ports", edit: func(a *appv1.AppService) { a.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 81}} },
			field: "spec.ports[0].name", says: "every port needs a name"},
		{name: "duplicate names", edit: func(a *appv1.AppService) { a.Spec.Ports = []corev1.ServicePort{port("web", 80), port("web", 81)} },
			field: "spec.ports[1].name", says: "Duplicate value"},
		{name: "duplicate nodePorts", edit: func(a *appv1.AppService) {
			a.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, NodePort: 30080}, {Name: "b", Port: 81, NodePort: 30080}}
		}, field: "spec.ports[1].nodePort", says: "Duplicate value"},
		{name: "request above its limit", edit: func(a *appv1.AppService) {
			a.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}
		}, field: "spec.resources.requests[memory]", says: "less than or equal to the memory limit 512Mi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := MakeAppService("web", "shop", "nginx:1.27").Obj()
			tc.edit(app)
			errs := ValidateSpec(app.Spec, field.NewPath("spec"))
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("valid spec refused: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatal("invalid spec admitted")
			}
			if got := errs.ToAggregate().Error(); !strings.Contains(got, tc.field) || !strings.Contains(got, tc.says) {
				t.Errorf("errors %q do not name %s saying %q", got, tc.field, tc.says)
			}
		})
	}
}

// TestHandleRefusesCostlyQuantities: the API server hands an AppService over
// as written, and resource.ParseQuantity spends minutes on quantities such
// as 1e-2147483647. They are denied, naming the field, before decoding.
func TestHandleRefusesCostlyQuantities(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	authorize, _ := readable()
	v := NewValidator(scheme, authorize)
	for _, tc := range []struct{ spec, field string }{
		{`{"image":"nginx","ports":[{"name":"http","port":80}],"resources":{"limits":{"cpu":"1e-2147483647"}}}`, "spec.resources.limits.cpu"},
		{`{"image":"nginx","ports":[{"name":"http","port":80}],"resources":{"requests":{"memory":2E6024865272343}}}`, "spec.resources.requests.memory"},
		{`{"image":"nginx","ports":[{"name":"http","port":80}],"envs":[{"name":"C","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1e-99999999"}}}]}`,
			"spec.envs[0].valueFrom.resourceFieldRef.divisor"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			raw := `{"apiVersion":"app.kubeharness.dev/v1","kind":"AppService","metadata":{"name":"web","namespace":"shop"},"spec":` + tc.spec + `}`
			done := make(chan admission.Response, 1)
			go func() {
				done <- v.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					UID: "1", Operation: admissionv1.Create, Namespace: "shop", Name: "web",
					Object: runtime.RawExtension{Raw: []byte(raw)},
				}})
			}()
			select {
			case resp := <-done:
				if resp.Allowed || resp.Result == nil || resp.Result.Code != 422 || !strings.Contains(resp.Result.Message, tc.field) {
					t.Fatalf("allowed %v, result %+v; want a 422 denial naming %s", resp.Allowed, resp.Result, tc.field)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no answer within 10s, the webhook's timeout")
			}
		})
	}
}
