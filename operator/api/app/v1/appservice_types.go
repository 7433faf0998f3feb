package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppServiceSpec is the desired state of an AppService: one container image
// run as a Deployment of Size replicas behind a NodePort Service.
type AppServiceSpec struct {
	// Size is the number of replicas.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Size *int32 `json:"size,omitempty"`

	// Image is the container image, e.g. nginx:1.27 or registry.example.com/team/app@sha256:….
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9._/:@-]*[a-zA-Z0-9_])?$`
	Image string `json:"image"`

	// Ports are exposed by the Service (type NodePort) and the container
	// (containerPort = targetPort, or port when targetPort is unset).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.port >= 1 && p.port <= 65535)",message="every port must be between 1 and 65535"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.nodePort) || p.nodePort == 0 || (p.nodePort >= 30000 && p.nodePort <= 32767))",message="nodePort must be in the NodePort range 30000-32767"
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.port == p.port))",message="ports must be unique"
	// +listType=atomic
	Ports []corev1.ServicePort `json:"ports"`

	// Resources of the container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Envs are the container's environment variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	Envs []corev1.EnvVar `json:"envs,omitempty"`
}

// AppServiceStatus mirrors the Deployment's status.
type AppServiceStatus struct {
	// ObservedGeneration is the AppService generation the status is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the Deployment's status.replicas.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the Deployment's status.readyReplicas.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Conditions mirror the Deployment's conditions (Available,
	// Progressing, ReplicaFailure).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AppService runs an image as a Deployment behind a NodePort Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=appsvc
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AppService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppServiceSpec   `json:"spec,omitempty"`
	Status AppServiceStatus `json:"status,omitempty"`
}

// AppServiceList is a list of AppServices.
//
// +kubebuilder:object:root=true
type AppServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppService `json:"items"`
}
