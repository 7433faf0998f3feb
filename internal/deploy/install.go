package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kubeharness/kubeharness/operator/certs"
)

// ManagerServiceAccount is the identity the manager runs as: the
// ServiceAccount config/rbac creates and binds.
const ManagerServiceAccount = "kubeharness-manager"

// ManagerUser is the ServiceAccount's username.
func ManagerUser() string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", certs.DefaultNamespace, ManagerServiceAccount)
}

// VMControllerServiceAccount is the VirtualMachine controller's identity:
// the ServiceAccount config/vm/rbac creates and binds, in VMNamespace.
const VMControllerServiceAccount = "kubeharness-vm-controller"

// VMControllerUser is that ServiceAccount's username.
func VMControllerUser() string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", VMNamespace, VMControllerServiceAccount)
}

// ImpersonateVMController returns cfg acting as the VirtualMachine
// controller's ServiceAccount, with exactly config/vm/rbac's permissions.
func ImpersonateVMController(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: VMControllerUser(),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + VMNamespace, "system:authenticated"},
	}
	return c
}

// ImpersonateManager returns cfg acting as the manager's ServiceAccount, so
// the manager runs with exactly the permissions config/rbac grants it.
func ImpersonateManager(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: ManagerUser(),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + certs.DefaultNamespace, "system:authenticated"},
	}
	return c
}

// Render builds a kustomization directory below root with kustomize's Go
// API, as `kustomize build` would, and returns its objects.
func Render(root, dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, dir))
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", dir, err)
	}
	data, err := res.AsYaml()
	if err != nil {
		return nil, err
	}
	return decodeObjects(data, dir)
}

// RenderFile reads the objects of a multi-document YAML file.
func RenderFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeObjects(data, path)
}

func decodeObjects(data []byte, from string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", from, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// FromUnstructured converts u into the typed object into.
func FromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// InstallOptions say how kubeharness is installed into a control plane
// that runs no Pods (envtest).
type InstallOptions struct {
	Root string
	// WebhookURL is where the API server reaches the webhook server
	// (https://127.0.0.1:<port>); it replaces the webhook Service.
	WebhookURL string
	// Scheme decodes the rendered objects.
	Scheme *runtime.Scheme
}

// Install creates the manager's and the VirtualMachine controller's
// namespaces, config/rbac, config/vm/rbac (the VirtualMachine controller's)
// and config/webhook as kustomize renders them. The one envtest-specific change: the webhook
// configurations call WebhookURL instead of the Service. Their caBundle
// stays empty; the manager injects it.
func Install(ctx context.Context, c client.Client, o InstallOptions) error {
	for _, name := range []string{certs.DefaultNamespace, VMNamespace} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	for _, dir := range []string{"config/rbac", "config/vm/rbac", "config/webhook"} {
		objs, err := Render(o.Root, dir)
		if err != nil {
			return err
		}
		for _, u := range objs {
			obj, err := toTyped(o.Scheme, u)
			if err != nil {
				return err
			}
			switch t := obj.(type) {
			case *corev1.Service:
				continue // no Pods behind it here; the configurations call WebhookURL
			case *admissionregistrationv1.MutatingWebhookConfiguration:
				for i := range t.Webhooks {
					t.Webhooks[i].ClientConfig = urlClientConfig(t.Webhooks[i].ClientConfig, o.WebhookURL)
				}
			case *admissionregistrationv1.ValidatingWebhookConfiguration:
				for i := range t.Webhooks {
					t.Webhooks[i].ClientConfig = urlClientConfig(t.Webhooks[i].ClientConfig, o.WebhookURL)
				}
			}
			if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s %s from %s: %w", u.GetKind(), u.GetName(), dir, err)
			}
		}
	}
	return nil
}

func urlClientConfig(cc admissionregistrationv1.WebhookClientConfig, base string) admissionregistrationv1.WebhookClientConfig {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	url := strings.TrimSuffix(base, "/") + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: cc.CABundle}
}

func toTyped(scheme *runtime.Scheme, u *unstructured.Unstructured) (client.Object, error) {
	obj, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", u.GetKind())
	}
	return co, nil
}
