// Package component says what a control-plane binary is (Component: its
// name, the Go module and main package it is built from, how its version
// is asked and stamped in), which ones the harness knows, and how a binary
// is checked: that it is a working executable no one else could have
// changed (CheckBinaries, BinaryVersion), and that it is the version a
// store wants (UpToDate). A Want is a component at the version a store
// directory wants it, as a binaries.Source is asked for it.
//
// Everything under harness/binaries works with these: the lookup, the
// store, the envtest archive and the Go module build.
package component

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// Component is one control-plane binary and the Go module it is built from.
type Component struct {
	// Name is the binary's file name.
	Name string
	// Module is the Go module the binary's main package lives in.
	Module string
	// Package is the main package built. For a component with a main of
	// its own (Main), it is the package whose build module that main is
	// built in a copy of.
	Package string
	// VersionFlag prints the binary's version; its output must contain the
	// version the binary was built from.
	VersionFlag string
	// infoFlag prints the binary's full version information, gitCommit
	// included ("" for components that stamp no commit).
	infoFlag string
	// ldflags stamps the version, and the git commit it was tagged from
	// ("" when unknown), into the binary.
	ldflags func(v versions.Version, commit string) string
	// main, when set, is the source of a main package of kubeharness's,
	// built instead of Package in a copy of Package's build module, so
	// that it compiles against the same dependencies.
	main []byte
}

// Want is a component a store directory wants, as a binaries.Source is
// asked for it.
type Want struct {
	Component
	// Version is the version the binary must report: Kubernetes' for its
	// commands, etcd's own for etcd; zero for an etcd nothing pins, any
	// of which will do.
	Version versions.Version
	// Why says why no source asked before provided it ("not in the
	// envtest archive"), for the next one's message; empty for the first.
	Why string
}

// The kube-apiserver-test main (KubeAPIServerTest). The file is excluded
// from kubeharness's own builds by a build constraint that MainSource
// drops.
//
//go:embed kubeapiservertest/main.go
var kubeAPIServerTestMain []byte

var (
	// KubeAPIServer is built from k8s.io/kubernetes with every staging module
	// replaced by its published version.
	KubeAPIServer = Component{
		Name: "kube-apiserver", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-apiserver",
		VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
	}
	// KubeAPIServerTest is kube-apiserver for test control planes: the same
	// server, started by a main of kubeharness's (kubeapiservertest/main.go)
	// that builds the built-in APIs' OpenAPI documents on their first
	// request instead of before serving. Builds of kube-apiserver build it
	// beside it where it compiles (Kubernetes 1.37 and later); tuned control
	// planes run it when their binary directory holds it.
	KubeAPIServerTest = Component{
		Name: "kube-apiserver-test", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-apiserver",
		VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
		main: kubeAPIServerTestMain,
	}
	// KubeControllerManager is built like kube-apiserver; the envtest
	// provider adds it where specs need garbage collection or CSR signing.
	KubeControllerManager = Kube("kube-controller-manager")
	// Etcd is built from go.etcd.io/etcd/server/v3, whose root is etcd's main package.
	Etcd = Component{
		Name: "etcd", Module: "go.etcd.io/etcd/server/v3", Package: "go.etcd.io/etcd/server/v3",
		VersionFlag: "--version", ldflags: etcdLDFlags,
	}
	// Kubectl is built like kube-apiserver; envtest's asset set includes it.
	Kubectl = Kube("kubectl")
)

// DefaultComponents are what a control plane needs.
var DefaultComponents = []Component{Etcd, KubeAPIServer}

// EnvtestComponents are the binaries an envtest asset directory holds, the
// set `kubeharness bins use` installs: etcd, kube-apiserver and kubectl.
var EnvtestComponents = []Component{Etcd, KubeAPIServer, Kubectl}

// Known are the components the harness itself runs or provides: etcd,
// kube-apiserver, kube-controller-manager and kubectl. A build module
// generated for a module declares the main packages of those it provides
// as tools, with those of the components a caller asks for besides
// (Kube: kubelet, kubeadm, …).
func Known() []Component {
	return []Component{KubeAPIServer, KubeControllerManager, Etcd, Kubectl}
}

// Kube is the k8s.io/kubernetes command name (k8s.io/kubernetes/cmd/name)
// as a component, built and stamped like kube-apiserver; kubectl and
// kubeadm print their version their own way.
func Kube(name string) Component {
	c := Component{
		Name: name, Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/" + name,
		VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
	}
	switch name {
	case "kubectl":
		c.VersionFlag, c.infoFlag = "version --client", "version --client -o json"
	case "kubeadm":
		c.VersionFlag, c.infoFlag = "version -o short", "version -o json"
	}
	return c
}

// ControlPlaneNames are the binaries a control plane may run from its
// directory of binaries: etcd, kube-apiserver or kube-apiserver-test
// beside it, kube-controller-manager when controllers are asked for, and
// kubectl for a suite's clients.
func ControlPlaneNames() []string {
	return Names([]Component{Etcd, KubeAPIServer, KubeAPIServerTest, KubeControllerManager, Kubectl})
}

// Names are the names of components.
func Names(components []Component) []string {
	names := make([]string, len(components))
	for i, c := range components {
		names[i] = c.Name
	}
	return names
}

// IsEtcd reports whether c is etcd, which has a version of its own.
func (c Component) IsEtcd() bool { return c.Module == Etcd.Module }

// LDFlags are the linker flags that stamp version v, and the git commit it
// was tagged from ("" when unknown), into c's binary.
func (c Component) LDFlags(v versions.Version, commit string) string {
	if c.ldflags == nil {
		return kubeLDFlags(v, commit)
	}
	return c.ldflags(v, commit)
}

// StampsCommit reports whether c's binary carries the git commit it was
// built from, which its info flag prints.
func (c Component) StampsCommit() bool { return c.infoFlag != "" }

// Main is the source of c's own main package, nil for a component built
// from its module's (Package).
func (c Component) Main() []byte { return c.main }

// MainSource is c's own main package without the build constraint that
// keeps it out of kubeharness's own builds.
func (c Component) MainSource() []byte {
	return bytes.Replace(c.main, []byte("//go:build ignore\n\n"), nil, 1)
}

// MainModulePath is the module path of c's own main's module, which a
// binary built from it reports as its main package (debug/buildinfo): it
// names the main's source, so that a binary built from another version of
// it is built again.
func (c Component) MainModulePath() string {
	sum := sha256.Sum256(c.main)
	return "kubeharness.local/" + c.Name + "/" + hex.EncodeToString(sum[:6])
}

// kubeLDFlags stamps the version the way Kubernetes' own build does;
// without it the binary reports v0.0.0-master and clients' version
// discovery breaks. commit is the git commit the version was tagged from,
// as the Go module proxy reports it; when it reports none gitCommit is
// stamped empty rather than left at the source's placeholder.
func kubeLDFlags(v versions.Version, commit string) string {
	var b strings.Builder
	b.WriteString("-s -w")
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&b, " -X %s.gitVersion=v%s -X %s.gitMajor=%d -X %s.gitMinor=%d -X %s.gitCommit=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z",
			pkg, v, pkg, v.Major(), pkg, v.Minor(), pkg, commit, pkg, pkg)
	}
	return b.String()
}

// etcdLDFlags stamps the version where etcd keeps its git SHA, which
// `etcd --version` prints. No commit is looked up for etcd: it has no
// info flag to check one with.
func etcdLDFlags(v versions.Version, _ string) string {
	return "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v" + v.String()
}
