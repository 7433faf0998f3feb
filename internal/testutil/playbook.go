package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// PlaybookWrapper builds a Playbook for tests.
type PlaybookWrapper struct{ opsv1.Playbook }

// MakePlaybook starts a Playbook with a name and namespace.
func MakePlaybook(name, namespace string) *PlaybookWrapper {
	return &PlaybookWrapper{opsv1.Playbook{
		TypeMeta:   metav1.TypeMeta{APIVersion: opsv1.GroupVersion.String(), Kind: "Playbook"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// GenerateName sets metadata.generateName and clears the name.
func (w *PlaybookWrapper) GenerateName(prefix string) *PlaybookWrapper {
	w.Name, w.ObjectMeta.GenerateName = "", prefix
	return w
}

// Abstract sets spec.abstract.
func (w *PlaybookWrapper) Abstract(a string) *PlaybookWrapper {
	w.Spec.Abstract = a
	return w
}

// Protected sets spec.deletionProtection.
func (w *PlaybookWrapper) Protected(p bool) *PlaybookWrapper {
	w.Spec.DeletionProtection = p
	return w
}

// Progress sets status.progress.
func (w *PlaybookWrapper) Progress(p int32) *PlaybookWrapper {
	w.Status.Progress = p
	return w
}

// Obj returns the Playbook.
func (w *PlaybookWrapper) Obj() *opsv1.Playbook {
	return w.Playbook.DeepCopy()
}
