package testutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
)

// AppServiceWrapper builds an AppService for tests.
type AppServiceWrapper struct{ appv1.AppService }

// MakeAppService starts an AppService of one replica of image serving port 80.
func MakeAppService(name, namespace, image string) *AppServiceWrapper {
	return &AppServiceWrapper{appv1.AppService{
		TypeMeta:   metav1.TypeMeta{APIVersion: appv1.GroupVersion.String(), Kind: "AppService"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appv1.AppServiceSpec{
			Size: ptr.To[int32](1), Image: image,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}}
}

// Size sets spec.size.
func (w *AppServiceWrapper) Size(n int32) *AppServiceWrapper {
	w.Spec.Size = ptr.To(n)
	return w
}

// Ports sets spec.ports.
func (w *AppServiceWrapper) Ports(p ...corev1.ServicePort) *AppServiceWrapper {
	w.Spec.Ports = p
	return w
}

// Env adds an environment variable.
func (w *AppServiceWrapper) Env(name, value string) *AppServiceWrapper {
	w.Spec.Envs = append(w.Spec.Envs, corev1.EnvVar{Name: name, Value: value})
	return w
}

// Resources sets spec.resources.
func (w *AppServiceWrapper) Resources(r corev1.ResourceRequirements) *AppServiceWrapper {
	w.Spec.Resources = r
	return w
}

// Obj returns the AppService.
func (w *AppServiceWrapper) Obj() *appv1.AppService {
	return w.AppService.DeepCopy()
}
