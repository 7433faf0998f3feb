// Package v1alpha1 contains the cloudnative.kubeharness.dev/v1alpha1 API:
// the VirtualMachine kind, whose controller (package operator/vm) is
// written the client-go way, on the clientset, listers and informers
// generated from this package into operator/vm/generated
// (hack/update-codegen.sh). DeepCopy methods come from controller-gen,
// like those of the other API packages.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=cloudnative.kubeharness.dev
package v1alpha1
