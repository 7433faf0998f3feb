// Package harness is the root of the kubeharness library: packages that any
// operator project can import to test against real API servers. None of
// them knows anything of the operator this repository also holds; a test
// (layout_test.go) keeps it so.
//
//   - envtest: a drop-in for controller-runtime's envtest.Environment that
//     starts the tuned control plane;
//   - cluster: the Cluster a suite talks to and the Providers that bring
//     one up (Envtest, Existing; kind's is in harness/kind), abilities only
//     some have being interfaces of their own;
//   - controlplane: etcd, kube-apiserver and kube-controller-manager for
//     tests, tuned or stock, with faults (kill, pause, restart);
//     controlplane/cycles starts and stops one many times and reports
//     what failed and what leaked;
//   - binaries: the control-plane binaries: Lookup, the one lookup
//     (controller-runtime's order, then the store), and Store.Provide,
//     which fills a store from an ordered list of Sources;
//     binaries/store is the store on disk, laid out as setup-envtest lays
//     out its own; binaries/component what a binary is and how it is
//     checked; the two sources are binaries/envtestarchive (the official
//     envtest archive: index, sha512, download) and binaries/gobuild (a
//     build from source), which asks the Go module proxy through
//     binaries/goproxy, as the versions Resolver does;
//   - versions: a Kubernetes version parsed once, versions.yaml (a
//     Lockfile), and the Resolver that turns a request (a patch, a minor,
//     the default) into a patch release, asking the Go module proxy which
//     patches it serves;
//   - kind (a module of its own): kind clusters through kind's Go API, with
//     a node image picked from an explicit one, a pinned stock one or an
//     offline one;
//   - suite: parallel Ginkgo processes on one control plane, a namespace
//     per spec, failure bundles;
//   - shard: a suite's specs split across machines by a previous run's
//     times, as the Ginkgo arguments each machine runs;
//   - coverage: which blocks each spec made the processes under test run
//     (RecordSpecs in a suite; coverage/flush's Start in a binary's main),
//     and Affected, the specs a change since a commit needs, as Ginkgo
//     arguments that compose with shard;
//   - bundle: a failed spec's objects, events and log windows;
//   - faults: an HTTPS proxy between a client and the API server that adds
//     latency, errors and resets;
//   - report: a run's page (report/index.html) and job summary, from
//     Ginkgo's JSON report and the failure bundles;
//   - process: a child process's life (start, stop, wait, recognize by
//     pid), the one way the harness runs a binary; process/leaks finds
//     what processes left behind;
//   - rbacaudit: least privilege proven from an API server audit log and
//     RBAC manifests: the rules no request used, the requests forbidden;
//   - cli: the kubeharness command any project installs (bins use, list
//     and cleanup; shard; report; version) as a cobra tree another command
//     can mount; cmd/kubeharness is its main package, what
//     `go install github.com/kubeharness/kubeharness/harness/cmd/kubeharness@VERSION`
//     and `go get -tool` take.
//
// Below internal/, ownership (who else may write what the harness is
// about to trust), clihint (how to get the kubeharness command that
// messages name, at the library's own version), safefile (a regular file
// read with a limit, never through a link; a file written whole), and
// proctest, testbins and archivetest (child processes, a second user, the
// control-plane binaries and fake envtest archives for the harness's own
// tests) serve these packages and cannot be imported.
package harness
