package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/webhook/internal/patch"
)

// Path the webhook is served on; config/webhook is generated from the marker
// below and must name the same path.
const Path = "/mutate-v1-pod-sidecar"

const (
	// NamespaceLabel=enabled selects the namespaces whose Pods are injected;
	// the webhook configuration's namespaceSelector matches it.
	NamespaceLabel = "kubeharness.dev/sidecar-injection"
	// InjectAnnotation="false" on a Pod opts it out.
	InjectAnnotation = "sidecar.kubeharness.dev/inject"
	// StatusAnnotation=injected marks a Pod that has been injected.
	StatusAnnotation = "sidecar.kubeharness.dev/status"
	StatusInjected   = "injected"

	InitContainerName    = "kubeharness-init"
	SidecarContainerName = "kubeharness-sidecar"
)

// systemNamespaces are never injected, whatever their labels: a broken
// sidecar there could take the control plane's own Pods down with it.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// +kubebuilder:webhook:path=/mutate-v1-pod-sidecar,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=sidecar.kubeharness.dev,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=Never

// Injector is the admission handler injecting Config into new Pods outside
// the system namespaces and SkipNamespaces.
type Injector struct {
	Config         Config
	SkipNamespaces []string

	decoder admission.Decoder
}

var _ admission.Handler = &Injector{}

// NewInjector returns an Injector decoding Pods with scheme. skip names
// namespaces never injected besides the system ones; the manager passes its
// own, so that it never depends on the sidecar it injects.
func NewInjector(scheme *runtime.Scheme, cfg Config, skip ...string) *Injector {
	return &Injector{Config: cfg, SkipNamespaces: skip, decoder: admission.NewDecoder(scheme)}
}

// SetupWebhookWithManager registers the injector on the manager's webhook
// server. cfg is validated by the caller (manager.Options.Validate).
func SetupWebhookWithManager(mgr ctrl.Manager, cfg Config, skip ...string) error {
	mgr.GetWebhookServer().Register(Path, &admission.Webhook{Handler: NewInjector(mgr.GetScheme(), cfg, skip...)})
	return nil
}

// Handle injects a Pod on CREATE and allows everything else unchanged.
func (i *Injector) Handle(_ context.Context, req admission.Request) admission.Response {
	// The webhook is registered for CREATE only; injecting into a running
	// Pod's spec would be refused by the API server anyway.
	if req.Operation != admissionv1.Create {
		return admission.Allowed(fmt.Sprintf("not injected: %s is not a Pod creation", req.Operation))
	}
	if slices.Contains(systemNamespaces, req.Namespace) || slices.Contains(i.SkipNamespaces, req.Namespace) {
		return admission.Allowed(fmt.Sprintf("not injected: namespace %s is never injected", req.Namespace))
	}
	pod := &corev1.Pod{}
	if err := i.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the Pod: %w", err))
	}
	if reason := skipReason(pod); reason != "" {
		return admission.Allowed("not injected: " + reason)
	}
	Inject(pod, i.Config)
	patch, err := injectionPatch(req.Object.Raw, pod)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("patching the Pod: %w", err))
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: true, Patch: patch, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch),
	}}
}

// injectionPatch adds what Inject added to pod, the injected Pod, to raw,
// the Pod as the API server sent it, and touches nothing else. A diff of
// raw against pod re-encoded would also remove every field this build's
// Pod type does not know, such as the fields of a newer API server.
func injectionPatch(raw []byte, pod *corev1.Pod) ([]byte, error) {
	obj, err := patch.Members(raw)
	if err != nil || obj == nil {
		return nil, errors.New("the object is not a JSON object")
	}
	ops := patch.AddAnnotations(obj, map[string]string{StatusAnnotation: StatusInjected})
	// A null spec or list is absent for the decoder, so it is set whole
	// like an absent one (add replaces an existing member).
	spec, _ := patch.Members(obj["spec"])
	initContainer, sidecar := pod.Spec.InitContainers[0], pod.Spec.Containers[len(pod.Spec.Containers)-1]
	if spec == nil {
		ops = append(ops, patch.Add("/spec", map[string]any{
			"initContainers": []corev1.Container{initContainer}, "containers": []corev1.Container{sidecar},
		}))
	} else {
		if patch.IsNull(spec["initContainers"]) {
			ops = append(ops, patch.Add("/spec/initContainers", []corev1.Container{initContainer}))
		} else {
			ops = append(ops, patch.Add("/spec/initContainers/0", initContainer))
		}
		if patch.IsNull(spec["containers"]) {
			ops = append(ops, patch.Add("/spec/containers", []corev1.Container{sidecar}))
		} else {
			ops = append(ops, patch.Add("/spec/containers/-", sidecar))
		}
	}
	return json.Marshal(ops)
}

// Inject adds the init container, run before the Pod's own, and the sidecar
// container, after the Pod's own, and marks pod injected. It leaves alone,
// and reports false for, a Pod that opted out, runs in the host network or
// is injected already.
func Inject(pod *corev1.Pod, cfg Config) (changed bool) {
	if skipReason(pod) != "" {
		return false
	}
	initContainer := corev1.Container{
		Name:            InitContainerName,
		Image:           cfg.InitImage,
		Resources:       *cfg.InitResources.DeepCopy(),
		SecurityContext: RestrictedSecurityContext(),
	}
	sidecar := corev1.Container{
		Name:            SidecarContainerName,
		Image:           cfg.SidecarImage,
		Resources:       *cfg.SidecarResources.DeepCopy(),
		SecurityContext: RestrictedSecurityContext(),
	}
	pod.Spec.InitContainers = append([]corev1.Container{initContainer}, pod.Spec.InitContainers...)
	pod.Spec.Containers = append(pod.Spec.Containers, sidecar)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[StatusAnnotation] = StatusInjected
	return true
}

// InjectedUser is the user the injected containers run as: not root, as
// the restricted Pod Security profile requires, whatever user their images
// name (the distroless "nonroot" user).
const InjectedUser int64 = 65532

// RestrictedSecurityContext is the securityContext of the injected
// containers. It meets the restricted Pod Security Standard on its own, so
// injecting never makes a compliant Pod non-compliant, whatever the Pod's
// own securityContext says: no privilege escalation, every capability
// dropped, not root, the runtime's default seccomp profile, and a read-only
// root filesystem.
func RestrictedSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(InjectedUser),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
}

// skipReason says why pod is not to be injected, or is empty.
func skipReason(pod *corev1.Pod) string {
	switch {
	case pod.Annotations[InjectAnnotation] == "false":
		return fmt.Sprintf("the Pod is annotated %s=false", InjectAnnotation)
	case pod.Annotations[StatusAnnotation] == StatusInjected:
		return fmt.Sprintf("the Pod is annotated %s=%s already", StatusAnnotation, StatusInjected)
	case hasContainer(pod, InitContainerName) || hasContainer(pod, SidecarContainerName):
		return "the Pod has a container named like an injected one already"
	case pod.Spec.HostNetwork:
		// Such a Pod shares the node's network namespace: a proxy set up
		// there would intercept the node's traffic, not the Pod's.
		return "the Pod uses the host network"
	}
	return ""
}

func hasContainer(pod *corev1.Pod, name string) bool {
	named := func(c corev1.Container) bool { return c.Name == name }
	return slices.ContainsFunc(pod.Spec.InitContainers, named) || slices.ContainsFunc(pod.Spec.Containers, named)
}
