// Package controlplane runs a Kubernetes control plane for tests: etcd,
// kube-apiserver and optionally kube-controller-manager, from the binaries
// harness/binaries resolves (built from source, or $KUBEBUILDER_ASSETS).
// Start runs them tuned (etcd on tmpfs without fsync, a pre-bootstrapped etcd
// template, fast single-member election) or, with Options.Stock, through
// controller-runtime's envtest as it comes, for comparison.
//
// The package knows nothing of the kubeharness operator or webhooks: CRDs,
// RBAC and controllers are installed on top of it by its callers.
package controlplane
