// Package binaries finds, checks and builds the control-plane binaries
// (etcd, kube-apiserver, kube-controller-manager) the envtest provider runs,
// from source through the Go module proxy. Resolver is the one place that
// turns the Kubernetes version a user asks for ($K8S_VERSION, a --version
// flag, a VERSION argument, or versions.yaml's default) into a patch that
// can be built; Resolver.Locate finds and checks the binaries for it,
// $KUBEBUILDER_ASSETS first; Builder.Build builds what is missing.
//
// By file: components.go lists the components (name, main package,
// module, how the version is stamped in) and the sets callers ask for;
// version.go resolves versions (Request, Resolver, and which etcd goes with
// a Kubernetes version); lockfile.go reads versions.yaml and lays out the
// repository's bin/; assets.go checks binaries and locates them; store.go
// lists and finds what a setup-envtest-style store holds; proxy.go asks
// the Go module proxy, through the go command, what it lists and serves;
// gomod.go reads go.mod files, k8s.io/kubernetes's once per Builder and
// version; buildmodule.go picks or generates the module a component is
// built in; build.go runs `go build` with progress reports; uptodate.go
// decides what need not be built: binaries already up to date, or in the
// Reuse store.
package binaries
