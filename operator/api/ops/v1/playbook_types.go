package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// CleanupFinalizer holds a Playbook until the controller has removed the
	// objects it owns.
	CleanupFinalizer = "ops.kubeharness.dev/cleanup"

	// ConditionReady is True while the Playbook's notes ConfigMap is in place.
	ConditionReady = "Ready"
	// ConditionFinished is True once status.progress reached 100. While the
	// Playbook is protected the controller cannot delete it and says so here.
	ConditionFinished = "Finished"

	// ProgressComplete is the progress at which a Playbook is read and removed.
	ProgressComplete = 100
)

// PlaybookSpec is the desired state of a Playbook.
type PlaybookSpec struct {
	// Abstract summarises the Playbook. The defaulting webhook trims it and
	// fills in "Playbook <name>" when it is empty. The controller copies it
	// into the notes ConfigMap, so it is bounded well below a ConfigMap's
	// 1 MiB.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Abstract string `json:"abstract,omitempty"`

	// DeletionProtection makes the validating webhook deny DELETE requests
	// until it is set back to false.
	// +kubebuilder:default=false
	// +optional
	DeletionProtection bool `json:"deletionProtection,omitempty"`
}

// PlaybookStatus is the observed state of a Playbook.
type PlaybookStatus struct {
	// Progress is how much of the Playbook has been read, in percent. At 100
	// the controller records an Event and deletes the Playbook.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=0
	// +optional
	Progress int32 `json:"progress,omitempty"`

	// Conditions describe the Playbook's state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Playbook is a book of operations whose reading progress is tracked; a
// finished Playbook removes itself.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pb
// +kubebuilder:printcolumn:name="Abstract",type=string,JSONPath=`.spec.abstract`
// +kubebuilder:printcolumn:name="Progress",type=integer,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Protected",type=boolean,JSONPath=`.spec.deletionProtection`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Playbook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PlaybookSpec   `json:"spec,omitempty"`
	Status PlaybookStatus `json:"status,omitempty"`
}

// NotesConfigMapName is the name of the ConfigMap the controller keeps for a
// Playbook.
func (p *Playbook) NotesConfigMapName() string { return p.Name + NotesSuffix }

// NotesSuffix follows a Playbook's name in the name of its notes ConfigMap.
const NotesSuffix = "-notes"

// PlaybookList is a list of Playbooks.
//
// +kubebuilder:object:root=true
type PlaybookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Playbook `json:"items"`
}
