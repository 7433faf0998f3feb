// Package e2e holds the kubeharness Ginkgo specs. They run on the provider
// $PROVIDER selects (envtest by default) and are labelled by capability:
// playbook, delete-validation, deletion.
package e2e
