package deploy

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kubeharness/kubeharness/internal/manager"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
)

// Scheme holds every type the specs handle: the manager's (built-in
// types, CRDs, Playbooks, AppServices) and the VirtualMachines of the VM
// controller, which is a binary of its own.
func Scheme() *runtime.Scheme {
	s := manager.Scheme()
	utilruntime.Must(cloudv1.AddToScheme(s))
	return s
}
