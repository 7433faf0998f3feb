// Package binaries finds, checks and builds the control-plane binaries
// (etcd, kube-apiserver, kube-controller-manager) the envtest provider runs,
// from source through the Go module proxy. Which Kubernetes version is
// asked for and what it resolves to is package versions' concern: Locate
// finds and checks the binaries for a versions.Selector ($KUBEBUILDER_ASSETS
// first, else the build of the version a versions.Resolver resolves it
// to); Find does the same for a versions.Version already resolved;
// Builder.Build builds what is missing; NewResolver is a versions.Resolver
// that asks the Go module proxy through the go command (Builder implements
// versions.Proxy).
//
// By file: components.go lists the components (name, main package,
// module, how the version is stamped in) and the sets callers ask for;
// assets.go checks binaries and locates them; store.go lays out the
// repository's bin/ and lists and finds what a setup-envtest-style store
// holds; proxy.go asks the Go module proxy, through the go command, what
// it lists and serves; gomod.go reads go.mod files, k8s.io/kubernetes's
// once per Builder and version; buildmodule.go picks or generates the
// module a component is built in; build.go runs `go build` with progress
// reports, and picks the etcd that goes with a Kubernetes version;
// uptodate.go decides what need not be built: binaries already up to
// date, or in the Reuse store.
package binaries
