// Package framework is the kubeharness e2e harness: providers that bring up
// a cluster with the manager running against it (envtest today; kind and
// existing clusters later), waits, per-spec namespaces and failure bundles.
// The same Ginkgo specs run on every provider.
package framework
