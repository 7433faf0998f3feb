// Package controlplane runs a Kubernetes control plane for tests: etcd,
// kube-apiserver and optionally kube-controller-manager, from a directory
// of binaries its caller names (Options.BinaryDir; harness/binaries finds
// or provides one). Each process is a component of its own (etcd.go,
// apiserver.go, controllermanager.go) with its flags, start, readiness and
// faults, composed by ControlPlane.
//
// Start runs them tuned: etcd on tmpfs without fsync, from a
// pre-bootstrapped etcd template (Options.TemplateDir, beside the binaries
// where PrepareTemplate made it, or the user's cache), with a fast
// single-member election. A tuned etcd listens on unix sockets in a
// directory only this user can enter, and binaries or an etcd template
// another user could have changed are refused (binarytrust.go, trust.go):
// stricter than controller-runtime's envtest, whose etcd serves every local
// user.
//
// The package knows nothing of the kubeharness operator or webhooks: CRDs,
// RBAC and controllers are installed on top of it by its callers.
package controlplane
