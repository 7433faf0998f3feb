package sidecar

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
)

func TestInject(t *testing.T) {
	cfg := DefaultConfig()
	app := corev1.Container{Name: "app", Image: "app:1"}
	migrate := corev1.Container{Name: "migrate", Image: "migrate:1"}
	// What the restricted Pod Security Standard asks of every container.
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](65532),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
	initC := corev1.Container{Name: InitContainerName, Image: cfg.InitImage, Resources: cfg.InitResources, SecurityContext: restricted}
	sidecar := corev1.Container{Name: SidecarContainerName, Image: cfg.SidecarImage, Resources: cfg.SidecarResources, SecurityContext: restricted}
	injected := map[string]string{StatusAnnotation: StatusInjected}
	pod := func(annotations map[string]string, spec corev1.PodSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-", Namespace: "shop", Annotations: annotations}, Spec: spec}
	}
	cases := []struct {
		name        string
		in, want    *corev1.Pod
		wantChanged bool
	}{
		{
			name:        "plain",
			in:          pod(nil, corev1.PodSpec{Containers: []corev1.Container{app}}),
			want:        pod(injected, corev1.PodSpec{InitContainers: []corev1.Container{initC}, Containers: []corev1.Container{app, sidecar}}),
			wantChanged: true,
		},
		{
			name:        "own init container runs after ours",
			in:          pod(map[string]string{"team": "shop"}, corev1.PodSpec{InitContainers: []corev1.Container{migrate}, Containers: []corev1.Container{app}}),
			want:        pod(map[string]string{"team": "shop", StatusAnnotation: StatusInjected}, corev1.PodSpec{InitContainers: []corev1.Container{initC, migrate}, Containers: []corev1.Container{app, sidecar}}),
			wantChanged: true,
		},
		{
			name:        "inject annotation other than false",
			in:          pod(map[string]string{InjectAnnotation: "true"}, corev1.PodSpec{Containers: []corev1.Container{app}}),
			want:        pod(map[string]string{InjectAnnotation: "true", StatusAnnotation: StatusInjected}, corev1.PodSpec{InitContainers: []corev1.Container{initC}, Containers: []corev1.Container{app, sidecar}}),
			wantChanged: true,
		},
		{
			name: "opted out",
			in:   pod(map[string]string{InjectAnnotation: "false"}, corev1.PodSpec{Containers: []corev1.Container{app}}),
			want: pod(map[string]string{InjectAnnotation: "false"}, corev1.PodSpec{Containers: []corev1.Container{app}}),
		},
		{
			name: "status annotation",
			in:   pod(injected, corev1.PodSpec{Containers: []corev1.Container{app}}),
			want: pod(injected, corev1.PodSpec{Containers: []corev1.Container{app}}),
		},
		{
			name: "init container named like ours",
			in:   pod(nil, corev1.PodSpec{InitContainers: []corev1.Container{{Name: InitContainerName}}, Containers: []corev1.Container{app}}),
			want: pod(nil, corev1.PodSpec{InitContainers: []corev1.Container{{Name: InitContainerName}}, Containers: []corev1.Container{app}}),
		},
		{
			name: "container named like our sidecar",
			in:   pod(nil, corev1.PodSpec{Containers: []corev1.Container{app, {Name: SidecarContainerName}}}),
			want: pod(nil, corev1.PodSpec{Containers: []corev1.Container{app, {Name: SidecarContainerName}}}),
		},
		{
			name: "host network",
			in:   pod(nil, corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{app}}),
			want: pod(nil, corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{app}}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := Inject(tc.in, cfg)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("Pod (-want +got):\n%s", diff)
			}
			if Inject(tc.in, cfg) {
				t.Error("a second Inject changed the Pod again")
			}
		})
	}
}

func TestInjectCopiesResources(t *testing.T) {
	cfg := DefaultConfig()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	Inject(pod, cfg)
	// Every Pod gets the same Config; one Pod's lists must not be another's.
	pod.Spec.Containers[1].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("7")
	pod.Spec.InitContainers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("7Gi")
	if diff := cmp.Diff(DefaultConfig(), cfg); diff != "" {
		t.Errorf("changing the injected Pod changed the Config (-want +got):\n%s", diff)
	}
}

func TestHandle(t *testing.T) {
	injector := NewInjector(clientgoscheme.Scheme, DefaultConfig(), "kubeharness-system")
	cases := []struct {
		name        string
		req         admissionv1.AdmissionRequest
		wantAllowed bool
		wantCode    int32
		wantPatched bool
		mentioned   string
	}{
		{
			name:      "undecodable",
			req:       admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop", Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":"app"}}`)}},
			wantCode:  400,
			mentioned: "decoding the Pod",
		},
		{
			name:      "empty object",
			req:       admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop"},
			wantCode:  400,
			mentioned: "decoding the Pod",
		},
		{
			name:        "delete",
			req:         admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Namespace: "shop"},
			wantAllowed: true,
			wantCode:    200,
			mentioned:   "DELETE is not a Pod creation",
		},
		{
			name:        "kube-node-lease",
			req:         admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "kube-node-lease"},
			wantAllowed: true,
			wantCode:    200,
			mentioned:   "namespace kube-node-lease is never injected",
		},
		{
			name:        "kube-public",
			req:         admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "kube-public"},
			wantAllowed: true,
			wantCode:    200,
			mentioned:   "namespace kube-public is never injected",
		},
		{
			name:        "injected",
			req:         admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop", Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"app-"},"spec":{"containers":[{"name":"app","image":"app:1"}]}}`)}},
			wantAllowed: true,
			wantPatched: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := injector.Handle(context.Background(), admission.Request{AdmissionRequest: tc.req})
			if resp.Allowed != tc.wantAllowed {
				t.Fatalf("allowed = %v, want %v (result %+v)", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			if got := len(resp.Patch) != 0; got != tc.wantPatched {
				t.Errorf("patched = %v, want %v: %s", got, tc.wantPatched, resp.Patch)
			}
			if tc.mentioned == "" {
				return
			}
			if resp.Result == nil || resp.Result.Code != tc.wantCode || !strings.Contains(resp.Result.Message, tc.mentioned) {
				t.Errorf("result %+v, want code %d and a message mentioning %q", resp.Result, tc.wantCode, tc.mentioned)
			}
		})
	}
}

func TestBindFlags(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		var c Config
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.BindFlags(fs)
		return c, fs.Parse(args)
	}

	got, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	// Binding alone gives the defaults, the init container's resources too.
	want := d
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("without flags (-want +got):\n%s", diff)
	}

	got, err = parse("--sidecar-init-image=init:2", "--sidecar-image=proxy:2",
		"--sidecar-cpu-request=20m", "--sidecar-memory-request=48Mi", "--sidecar-cpu-limit=1", "--sidecar-memory-limit=1Gi")
	if err != nil {
		t.Fatal(err)
	}
	want = Config{InitImage: "init:2", SidecarImage: "proxy:2", InitResources: d.InitResources, SidecarResources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("48Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with flags (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ arg, mentioned string }{
		{"--sidecar-cpu-request=lots", `invalid value "lots" for flag -sidecar-cpu-request: "lots" is not a resource quantity`},
		{"--sidecar-memory-limit=64MB", `invalid value "64MB" for flag -sidecar-memory-limit`},
		{"--sidecar-memory-request=-1Mi", `"-1Mi" is negative`},
		// resource.ParseQuantity would take minutes on these.
		{"--sidecar-cpu-limit=1e-2147483647", "exponent must have at most 3 digits"},
		{"--sidecar-cpu-request=0." + strings.Repeat("0", 100) + "1", "at most 64 characters long"},
	} {
		if _, err := parse(tc.arg); err == nil || !strings.Contains(err.Error(), tc.mentioned) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.arg, err, tc.mentioned)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
	c := DefaultConfig()
	c.SidecarImage = ""
	c.SidecarResources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	c.SidecarResources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
	want := "the sidecar container image is empty\n" +
		"kubeharness-sidecar: cpu request 200m exceeds its limit 100m\n" +
		"kubeharness-sidecar: memory request 1Gi exceeds its limit 64Mi"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestHandlePatchesOnlyWhatItInjects: the patch adds the injected containers
// and annotation and nothing else, so fields this build's Pod type does not
// know (those of a newer API server), in the Pod or in its own init
// containers, are kept.
func TestHandlePatchesOnlyWhatItInjects(t *testing.T) {
	injector := NewInjector(clientgoscheme.Scheme, DefaultConfig())
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","annotations":{"a":"b"}},` +
		`"spec":{"initContainers":[{"name":"setup","image":"busybox","futureField":1}],"containers":[{"name":"web","image":"nginx"}],"futureField":true}}`
	resp := injector.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "shop", Object: runtime.RawExtension{Raw: []byte(raw)},
	}})
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	var ops []struct{ Op, Path string }
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	want := []struct{ Op, Path string }{
		{"add", "/metadata/annotations/sidecar.kubeharness.dev~1status"},
		{"add", "/spec/initContainers/0"},
		{"add", "/spec/containers/-"},
	}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Fatalf("patch %s (-want +got):\n%s", resp.Patch, diff)
	}
	var pod struct {
		Spec struct {
			FutureField    bool             `json:"futureField"`
			InitContainers []map[string]any `json:"initContainers"`
		} `json:"spec"`
	}
	patched := admissiontest.ApplyPatch(t, []byte(raw), resp)
	if err := json.Unmarshal(patched, &pod); err != nil {
		t.Fatal(err)
	}
	if !pod.Spec.FutureField || len(pod.Spec.InitContainers) != 2 || pod.Spec.InitContainers[1]["futureField"] != 1.0 {
		t.Errorf("the patched Pod %s lost the fields this build does not know", patched)
	}
}
