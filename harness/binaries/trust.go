package binaries

import (
	"os"

	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Who may write a store decides what kubeharness runs: the version checks
// run every binary found there, and control planes start them. So before
// anything in a store is run or trusted, checkStore makes sure that only
// the caller and root could have put it there, and CheckBinaries that no
// one else may change a directory of binaries it is given
// ($KUBEBUILDER_ASSETS included) or the binaries in it. Where file modes
// say nothing of owners and groups (Windows) nothing is checked.

// writableByOthers says who besides its owner may write the file or
// directory fi describes ("its group (staff)", "others"), or "" when no
// one may (ownership.OthersMayWrite): whoever may write a binary can
// change what kubeharness runs, and whoever may write a directory can
// replace what is in it.
func writableByOthers(fi os.FileInfo) string { return ownership.OthersMayWrite(fi) }

// checkStore refuses the store directory dir of the bin-dir root when
// someone other than the caller or root could have put what is in it
// there (store.Store.Check).
func checkStore(root, dir string, names ...string) error {
	return store.Store{Dir: root}.Check(dir, names...)
}

// storeNames are the files of a store directory kubeharness runs: every
// component's binary.
func storeNames() []string {
	var names []string
	for _, c := range append(allComponents(), KubeAPIServerTest) {
		names = append(names, c.Name)
	}
	return names
}

// componentNames are the names of components.
func componentNames(components []Component) []string {
	names := make([]string, len(components))
	for i, c := range components {
		names[i] = c.Name
	}
	return names
}

// ControlPlaneNames are the binaries a control plane may run from its
// directory of binaries: etcd, kube-apiserver or kube-apiserver-test
// beside it, kube-controller-manager when controllers are asked for, and
// kubectl for a suite's clients.
func ControlPlaneNames() []string {
	return componentNames([]Component{Etcd, KubeAPIServer, KubeAPIServerTest, KubeControllerManager, Kubectl})
}
