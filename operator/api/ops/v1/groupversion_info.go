// Package v1 contains the ops.kubeharness.dev/v1 API: the Playbook kind.
//
// +kubebuilder:object:generate=true
// +groupName=ops.kubeharness.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "ops.kubeharness.dev", Version: "v1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	// It is apimachinery's, so that importing the API pulls in no
	// controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Playbook{}, &PlaybookList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
