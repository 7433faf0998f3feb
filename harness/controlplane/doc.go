// Package controlplane runs a Kubernetes control plane for tests: etcd,
// kube-apiserver and optionally kube-controller-manager, from the binaries
// harness/binaries resolves (downloaded from the envtest archive or built
// from source, or $KUBEBUILDER_ASSETS).
// Start runs them tuned (etcd on tmpfs without fsync, a pre-bootstrapped etcd
// template, fast single-member election) or, with Options.Stock, through
// controller-runtime's envtest as it comes, for comparison. A tuned etcd
// listens on unix sockets in a directory only this user can enter, and an
// etcd template another user could have written is refused (etcdsocket.go,
// trust.go): stricter than envtest, whose etcd serves every local user.
//
// The package knows nothing of the kubeharness operator or webhooks: CRDs,
// RBAC and controllers are installed on top of it by its callers.
package controlplane
