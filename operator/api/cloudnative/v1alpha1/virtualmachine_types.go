package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionReady is True while the VirtualMachine's server runs.
const ConditionReady = "Ready"

// VirtualMachinePhase is where a VirtualMachine is in its life.
// +kubebuilder:validation:Enum=Creating;Active;Failed;Terminating;Unknown
type VirtualMachinePhase string

const (
	// VirtualMachineCreating means the server is being created (or created
	// again after it stopped or went away).
	VirtualMachineCreating VirtualMachinePhase = "Creating"
	// VirtualMachineActive means the server runs.
	VirtualMachineActive VirtualMachinePhase = "Active"
	// VirtualMachineFailed means the server could not be made or kept
	// running; status.reason says why.
	VirtualMachineFailed VirtualMachinePhase = "Failed"
	// VirtualMachineTerminating means the VirtualMachine is being deleted
	// and its server removed.
	VirtualMachineTerminating VirtualMachinePhase = "Terminating"
	// VirtualMachineUnknown means the server's state cannot be told.
	VirtualMachineUnknown VirtualMachinePhase = "Unknown"
)

// VirtualMachineSpec is the desired state of a VirtualMachine.
type VirtualMachineSpec struct {
	// Resource is what the VirtualMachine's server is given.
	// +required
	Resource VirtualMachineResource `json:"resource"`

	// Image is the container image reference the server runs,
	// [registry[:port]/]name:tag, [registry[:port]/]name@digest or both,
	// e.g. ubuntu:24.04 or registry.example.com:5000/vm/base@sha256:….
	// The path is lowercase. A tag or a digest is required: a bare name
	// would also match the IDs of the images present by prefix, and only
	// images named so run. Unset means the controller's default image.
	//
	// The pattern is, part by part: an optional registry host (letters,
	// digits, dots, hyphens) with an optional port, followed by "/"; path
	// components of lowercase letters and digits, separated within by ".",
	// "_", "__" or hyphens, and joined by "/"; then a ":tag" of up to 128
	// word characters, dots and hyphens, not starting with either, an
	// "@algorithm:hex" digest of at least 32 hex digits, or a tag followed
	// by a digest.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?(:[0-9]+)?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*((:\w[\w.-]{0,127})(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?|@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})$`
	// +optional
	Image string `json:"image,omitempty"`
}

// VirtualMachineResource is the CPU and memory of a VirtualMachine's
// server. Both are required and must be positive.
//
// A quantity arrives as a string or, written as a plain number, as an
// integer, so the rules convert it with string(self); isQuantity keeps a
// malformed string (which the schema's pattern reports) from failing the
// evaluation.
type VirtualMachineResource struct {
	// CPU is the number of CPUs, e.g. 1, 2 or 500m.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="cpu must be a positive quantity, e.g. 1 or 500m"
	// +required
	CPU resource.Quantity `json:"cpu"`

	// Memory is the amount of memory, e.g. 64Mi or 2Gi.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="memory must be a positive quantity, e.g. 64Mi"
	// +required
	Memory resource.Quantity `json:"memory"`
}

// VirtualMachineStatus is the observed state of a VirtualMachine.
type VirtualMachineStatus struct {
	// Phase is where the VirtualMachine is in its life: Creating, Active,
	// Failed, Terminating or Unknown.
	// +optional
	Phase VirtualMachinePhase `json:"phase,omitempty"`

	// Reason says, in a sentence, why the VirtualMachine is in its phase
	// (set mostly for Creating and Failed).
	// +optional
	Reason string `json:"reason,omitempty"`

	// Server is the server the VirtualMachine runs as.
	// +optional
	Server ServerStatus `json:"server,omitempty"`

	// LastUpdateTime is when the controller last wrote the status.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`

	// ObservedGeneration is the metadata.generation the status is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions describe the VirtualMachine's state; Ready is True while
	// its server runs.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ServerStatus is the server a VirtualMachine runs as.
type ServerStatus struct {
	// ID identifies the server to the driver that runs it.
	// +optional
	ID string `json:"id,omitempty"`

	// State is the server's state as the driver reports it, e.g. running
	// or exited.
	// +optional
	State string `json:"state,omitempty"`

	// Usage is the server's current CPU and memory use.
	// +optional
	Usage ServerUsage `json:"usage,omitempty"`
}

// ServerUsage is how much of its CPU and memory a server uses, in percent.
type ServerUsage struct {
	// CPU is the CPU use in percent of the server's CPUs.
	// +kubebuilder:validation:Minimum=0
	CPU float64 `json:"cpu"`

	// Memory is the memory use in percent of the server's memory.
	// +kubebuilder:validation:Minimum=0
	Memory float64 `json:"memory"`
}

// VirtualMachine is a virtual machine: a server of the given CPU and
// memory, running an image, for as long as the VirtualMachine exists.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vm;vms,scope=Namespaced
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="CPU",type=number,JSONPath=`.status.server.usage.cpu`
// +kubebuilder:printcolumn:name="Memory",type=number,JSONPath=`.status.server.usage.memory`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VirtualMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the VirtualMachine.
	// +required
	Spec VirtualMachineSpec `json:"spec"`

	// Status is the observed state of the VirtualMachine, written by its
	// controller.
	// +optional
	Status VirtualMachineStatus `json:"status,omitempty"`
}

// VirtualMachineList is a list of VirtualMachines.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VirtualMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the VirtualMachines.
	Items []VirtualMachine `json:"items"`
}
