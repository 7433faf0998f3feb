// Package framework is the kubeharness e2e harness. Its providers bring up a
// cluster with the manager running against it and hand the specs a Cluster:
//
//   - envtest (envtest_provider.go): a control plane from the controlplane
//     package with the CRDs, RBAC and webhook configurations installed
//     (install.go) and the manager in this process (internal/manager),
//     brought up by StartLocal (localenv.go), the one start-up path that
//     `kubeharness env up` (manager as a process) and `kubeharness bench`
//     use too;
//   - kind (kind_provider.go): a cluster from kind-config.yaml through the
//     kindcluster package, the manager image built and loaded, config/default
//     deployed (deploy.go);
//   - existing (existing_provider.go): the cluster of a kubeconfig context
//     (kubeconfig.go) that carries the disposable marker, kubeharness already
//     deployed.
//
// Kind and existing clusters are reached the same way (deployed.go). A
// provider that can export its cluster's logs implements LogExporter. Around
// them: per-spec namespaces and tenants, waits, workload images, the
// manager's log buffer and failure bundles. The same Ginkgo specs run on
// every provider.
//
// Subpackages: binaries resolves and builds the control-plane binaries,
// controlplane runs etcd, kube-apiserver and kube-controller-manager from
// them, and kindcluster drives kind; none of them knows the operator.
package framework
