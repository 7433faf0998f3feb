// Package binaries finds, checks and provides the control-plane binaries
// (etcd, kube-apiserver, kube-controller-manager) the envtest provider
// runs: downloaded from the official envtest archive where it can be had,
// else built from source through the Go module proxy. Which Kubernetes
// version is asked for and what it resolves to is package versions'
// concern: Locate finds and checks the binaries for a versions.Selector
// ($KUBEBUILDER_ASSETS first, else those of the version a
// versions.Resolver resolves it to); Find does the same for a
// versions.Version already resolved; Builder.Build provides what is
// missing, downloading or building as its Mode ($KUBEHARNESS_BINARIES)
// says; NewResolver is a versions.Resolver that asks the Go module proxy
// through the go command (Builder implements versions.Proxy).
//
// By file: components.go lists the components (name, main package,
// module, how the version is stamped in) and the sets callers ask for;
// assets.go checks binaries and locates them; store.go lays out the
// repository's bin/ and lists and finds what a setup-envtest-style store
// holds; trust.go refuses a store, or binaries, that others than the
// caller and root could have written; mode.go is the choice between
// download and build; index.go reads controller-tools' envtest release
// index (https only, unless told otherwise), as setup-envtest does;
// download.go fetches an envtest archive, checks its sha512 against the
// index's and extracts the binaries it holds, within size caps, and
// removes partial downloads killed runs left; origin.go records how each
// binary came into the store; proxy.go asks the Go module proxy, through
// the go command, what it lists and serves; gomod.go reads go.mod files,
// k8s.io/kubernetes's once per Builder and version; buildmodule.go picks
// or generates the module a component is built in; build.go provides each
// binary (kept, reused, downloaded or built) and runs `go build` with
// progress reports, and picks the etcd that goes with a Kubernetes
// version; uptodate.go decides what need not be provided again: binaries
// already up to date, or in the Reuse store.
package binaries
