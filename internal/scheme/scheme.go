package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// New returns a new scheme holding every type this operator handles:
// client-go's, CustomResourceDefinitions (apiextensions/v1), Playbooks
// (ops/v1), AppServices (app/v1) and VirtualMachines
// (cloudnative/v1alpha1). The VirtualMachine controller, a binary of its
// own, talks to the API server with its generated clientset; its types are
// here for the clients of the specs and the tools.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(opsv1.AddToScheme(s))
	utilruntime.Must(appv1.AddToScheme(s))
	utilruntime.Must(cloudv1.AddToScheme(s))
	return s
}
