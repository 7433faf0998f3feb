// Package testenv brings up this repository's operator for its tests and
// its dev environment. Its providers bring up a
// cluster with the manager running against it and hand the specs a Cluster:
//
//   - envtest (envtest_provider.go): a control plane from the controlplane
//     package with the CRDs, RBAC and webhook configurations installed
//     (install.go) and the manager in this process (internal/manager),
//     brought up by StartLocal (localenv.go), the one start-up path that
//     `kubeharness env up` (manager as a process) and `kubeharness bench`
//     use too;
//   - kind (kind_provider.go): a cluster from kind-config.yaml through the
//     harness/kind package, the manager image built and loaded, config/default
//     deployed (deploy.go);
//   - existing (existing_provider.go): the cluster of a kubeconfig context
//     (read by harness/cluster's Existing) that carries the disposable
//     marker, kubeharness already deployed.
//
// Kind and existing clusters are reached the same way (deployed.go). A
// provider that can export its cluster's logs implements
// cluster.LogExporter. Around them: per-spec tenants, waits, workload
// images, the manager's log buffer and its part of failure bundles
// (CollectManagerLogs). The same Ginkgo specs run on every provider. The
// fault environment and its loads are internal/faultenv's; the
// VirtualMachine controller's fake driver and image, internal/vmfixture's.
//
// The generic parts live in the harness library: harness/binaries resolves
// the control-plane binaries and downloads or builds them,
// harness/controlplane runs etcd, kube-apiserver and
// kube-controller-manager from them, harness/kind drives kind, and
// harness/bundle writes failure bundles. This package is what only this
// repository's operator needs; the e2e specs, `kubeharness env`,
// `kubeharness kind`, `kubeharness deploy` and `kubeharness bench` share it.
package testenv
