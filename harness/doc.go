// Package harness is the root of the kubeharness library: packages that any
// operator project can import to test against real API servers. None of
// them knows anything of the operator this repository also holds; a test
// (layout_test.go) keeps it so.
//
//   - envtest: a drop-in for controller-runtime's envtest.Environment that
//     starts the tuned control plane;
//   - controlplane: etcd, kube-apiserver and kube-controller-manager for
//     tests, tuned or stock, with faults (kill, pause, restart);
//     controlplane/cycles starts and stops one many times and reports
//     what failed and what leaked;
//   - binaries: the control-plane binaries built from source through the Go
//     module proxy, and a store laid out as setup-envtest lays out its own;
//   - kind: kind clusters through kind's Go API, with a node image picked
//     from an explicit one, a pinned stock one or an offline one;
//   - suite: parallel Ginkgo processes on one control plane, a namespace
//     per spec, failure bundles;
//   - bundle: a failed spec's objects, events and log windows;
//   - faults: an HTTPS proxy between a client and the API server that adds
//     latency, errors and resets;
//   - report: a run's page (report/index.html) and job summary, from
//     Ginkgo's JSON report and the failure bundles;
//   - process: a child process's life (start, stop, wait, recognize by
//     pid), the one way the harness runs a binary; process/leaks finds
//     what processes left behind;
//   - rbacaudit: least privilege proven from an API server audit log and
//     RBAC manifests: the rules no request used, the requests forbidden.
package harness
