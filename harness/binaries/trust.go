package binaries

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Who may write a store decides what kubeharness runs: the version checks
// run every binary found there, and control planes start them. So before
// anything in a store is run or trusted, checkStore makes sure that only
// the caller and root could have put it there, and CheckBinaries that no
// one else may change a directory of binaries it is given
// ($KUBEBUILDER_ASSETS included) or the binaries in it. Where file modes
// say nothing of owners and groups (Windows) nothing is checked.

// trustCheck gathers what makes files and directories untrustworthy, to
// say all of it, and every fix, at once (ownership.RefusalError).
type trustCheck struct {
	problems []error
}

// look records what is wrong with path (fi describes it): writable by its
// group or others, or, with owner, owned by someone other than the caller
// or root.
func (tc *trustCheck) look(path string, fi os.FileInfo, owner bool) {
	if owner {
		if who := ownership.ForeignOwner(fi); who != "" {
			tc.problems = append(tc.problems, &ownership.Error{Path: path, Owner: who, Mode: fi.Mode()})
		}
	}
	if who := writableByOthers(fi); who != "" {
		tc.problems = append(tc.problems, &ownership.Error{Path: path, Writers: who, Mode: fi.Mode()})
	}
}

// lookFiles looks at each of names in dir that exists.
func (tc *trustCheck) lookFiles(dir string, names []string, owner bool) {
	for _, name := range names {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err == nil {
			tc.look(path, fi, owner)
		}
	}
}

// err is nil when nothing was found wrong, else an error that starts with
// what, says what is wrong and what fixes it: `chmod go-w`, or else (for a
// store) another --bin-dir.
func (tc *trustCheck) err(what string, store bool) error {
	if store {
		return storeRefusal(what, tc.problems)
	}
	return ownership.Refuse(what, tc.problems)
}

// storeFix is how to get out of a store others could change.
const storeFix = "use a store only you can write: another --bin-dir (`kubeharness bins use VERSION --bin-dir DIR -p path`, and export KUBEBUILDER_ASSETS to the directory it prints)"

// storeRefusal refuses a store for problems (nil without any): what
// ("refusing the binaries store /s") first, then each problem, then the
// fixes: `chmod go-w` what others may write, remove what belongs to
// another user (it is provided again), or use another store.
func storeRefusal(what string, problems []error) error {
	var foreign []string
	for _, p := range problems {
		var oe *ownership.Error
		if errors.As(p, &oe) && oe.Owner != "" {
			foreign = append(foreign, oe.Path)
		}
	}
	var fixes []string
	if len(foreign) > 0 {
		fixes = append(fixes, "remove "+strings.Join(foreign, ", ")+" to have the binaries provided again")
	}
	return ownership.Refuse(what, problems, append(fixes, storeFix)...)
}

// writableByOthers says who besides its owner may write the file or
// directory fi describes ("its group (staff)", "others"), or "" when no
// one may (ownership.OthersMayWrite): whoever may write a binary can
// change what kubeharness runs, and whoever may write a directory can
// replace what is in it.
func writableByOthers(fi os.FileInfo) string { return ownership.OthersMayWrite(fi) }

// checkStore refuses the store directory dir of the bin-dir root when
// someone other than the caller or root could have put what is in it
// there: each directory from dir up to root must belong to the caller or
// root and be writable by no one else, and so must each of names in dir
// that exists (binaries, build module files). Directories above root are
// not checked: the bin-dir is the user's choice, and a repository's
// parents are the user's affair.
func checkStore(root, dir string, names ...string) error {
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	var tc trustCheck
	for i := len(chain) - 1; i >= 0; i-- {
		fi, err := os.Stat(chain[i])
		if err != nil {
			return fmt.Errorf("checking the binaries store %s: %w", root, err)
		}
		tc.look(chain[i], fi, true)
	}
	tc.lookFiles(dir, names, true)
	return tc.err("refusing the binaries store "+root, true)
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
