// Package binaries finds, checks and builds the control-plane binaries
// (etcd, kube-apiserver, kube-controller-manager) the envtest provider runs,
// from source through the Go module proxy. Resolver is the one place that
// turns the Kubernetes version a user asks for ($K8S_VERSION, a --version
// flag, a VERSION argument, or versions.yaml's default) into a patch that
// can be built; Resolver.Locate finds and checks the binaries for it,
// $KUBEBUILDER_ASSETS first.
package binaries
