// Package binaries finds and provides the control-plane binaries (etcd,
// kube-apiserver, kube-controller-manager, kubectl) the harness runs.
//
// Lookup is the one lookup: every caller (the envtest drop-in,
// cluster.Envtest, the kubeharness command, a project's suites through
// Find and Locate) finds binaries with it, in controller-runtime's order
// (a path named explicitly, $TEST_ASSET_<NAME>, $KUBEBUILDER_ASSETS,
// BinaryAssetsDirectory, /usr/local/kubebuilder/bin), then in a store laid
// out as setup-envtest's; nothing it finds runs before it passed the one
// trust rule (ownership.CheckRun).
//
// Store.Provide fills a store (binaries/store) with what it lacks: each
// binary already there and up to date stays, one another store holds is
// linked, and the rest are asked of the Store's Sources in order. A Source
// is one small interface with two implementations, each a package of its
// own: binaries/envtestarchive (the official envtest archive, its sha512
// from controller-tools' index) and binaries/gobuild (a build from source
// through the Go module proxy, binaries/goproxy). A Mode
// ($KUBEHARNESS_BINARIES: auto, download, build) is an ordered list of
// them (Sources). Store.Use is `kubeharness bins use`: the lookup of what
// is asked for, else Provide. Which Kubernetes version is asked for and
// what it resolves to is package versions'; NewResolver is a
// versions.Resolver that asks the Go module proxy (a goproxy.Client).
//
// By file: lookup.go is the lookup; assets.go its entry points for a
// version (Find, Locate); provide.go fills a store; source.go is the
// Source interface and the Modes; use.go the Store and Use; store.go and
// origin.go the store's names kept here; components.go the components
// (package component's); resolver.go the Resolver and the etcd of a
// Kubernetes version.
package binaries
