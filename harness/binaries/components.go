package binaries

import (
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
	// its own (main), it is the package whose build module that main is
	// built in a copy of.
	Package string
	// HackDir is the committed build module below hack/controlplane, used
	// when its pinned version is the one asked for.
	HackDir string
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
	// built instead of Package in a copy of Package's build module
	// (mainModule), so that it compiles against the same dependencies.
	main []byte
}

var (
	// KubeAPIServer is built from k8s.io/kubernetes with every staging module
	// replaced by its published version.
	KubeAPIServer = Component{
		Name: "kube-apiserver", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-apiserver",
		HackDir: "hack/controlplane", VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
	}
	// KubeAPIServerTest is kube-apiserver for test control planes: the same
	// server, started by a main of kubeharness's (kubeapiservertest/main.go)
	// that builds the built-in APIs' OpenAPI documents on their first
	// request instead of before serving. Builds of kube-apiserver build it
	// beside it where it compiles (Kubernetes 1.37 and later); tuned control
	// planes run it when their binary directory holds it.
	KubeAPIServerTest = Component{
		Name: "kube-apiserver-test", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-apiserver",
		HackDir: "hack/controlplane", VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
		main: kubeAPIServerTestMain,
	}
	// KubeControllerManager is built like kube-apiserver; the envtest
	// provider adds it where specs need garbage collection or CSR signing.
	KubeControllerManager = Component{
		Name: "kube-controller-manager", Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/kube-controller-manager",
		HackDir: "hack/controlplane", VersionFlag: "--version", infoFlag: "--version=raw", ldflags: kubeLDFlags,
	}
	// Etcd is built from go.etcd.io/etcd/server/v3, whose root is etcd's main package.
	Etcd = Component{
		Name: "etcd", Module: "go.etcd.io/etcd/server/v3", Package: "go.etcd.io/etcd/server/v3",
		HackDir: "hack/controlplane/etcd", VersionFlag: "--version", ldflags: etcdLDFlags,
	}
	// Kubectl is built like kube-apiserver; envtest's asset set includes it.
	Kubectl = kubeComponent("kubectl")
)

// DefaultComponents are what the envtest provider needs.
var DefaultComponents = []Component{Etcd, KubeAPIServer}

// EnvtestComponents are the binaries an envtest asset directory holds, the
// set `kubeharness bins use` installs: etcd, kube-apiserver and kubectl.
var EnvtestComponents = []Component{Etcd, KubeAPIServer, Kubectl}

// NodeComponents are what a kind node image needs besides the control
// plane: the node agent, the cluster bootstrapper, kubectl, and the
// scheduler and proxy kubeadm runs as static Pods and a DaemonSet.
var NodeComponents = []Component{
	kubeComponent("kubelet"), kubeComponent("kubeadm"), Kubectl,
	kubeComponent("kube-scheduler"), kubeComponent("kube-proxy"),
}

// allComponents is every component kubeharness builds. A build module
// declares the main packages of all those its module provides as tools, so
// that one module, tidied once, builds any of them.
func allComponents() []Component {
	return append([]Component{KubeAPIServer, KubeControllerManager, Etcd}, NodeComponents...)
}

// kubeComponent is a k8s.io/kubernetes command built like kube-apiserver;
// only kubectl and kubeadm print their version differently.
func kubeComponent(name string) Component {
	c := KubeAPIServer
	c.Name, c.Package = name, "k8s.io/kubernetes/cmd/"+name
	switch name {
	case "kubectl":
		c.VersionFlag, c.infoFlag = "version --client", "version --client -o json"
	case "kubeadm":
		c.VersionFlag, c.infoFlag = "version -o short", "version -o json"
	}
	return c
}

// kubeLDFlags stamps the version the way Kubernetes' own build does
// (hack/lib/version.sh); without it the binary reports v0.0.0-master and
// clients' version discovery breaks. commit is the git commit the version
// was tagged from, as the Go module proxy reports it; when it reports none
// gitCommit is stamped empty rather than left at the source's placeholder.
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
// infoFlag to check one with.
func etcdLDFlags(v versions.Version, _ string) string {
	return "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v" + v.String()
}
