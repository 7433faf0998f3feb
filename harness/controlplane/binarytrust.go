package controlplane

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/internal/clihint"
	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// provideBinaries is the fix for binaries others could change: binaries
// in a directory only this user can write.
const provideBinaries = "provide the binaries with `kubeharness bins use VERSION -p PATH`, PATH a directory only you can write, " +
	"and use the directory it prints (KUBEBUILDER_ASSETS, or Options.BinaryDir)"

// checkedBinaries are the binaries a control plane may run from its
// directory: etcd, kube-apiserver or kube-apiserver-test beside it,
// kube-controller-manager when controllers are asked for, and kubectl for
// a suite's clients (harness/envtest hands it to controller-runtime).
var checkedBinaries = []string{etcdBinary, apiServerBinary, apiServerTestBinary, controllerManagerBinary, "kubectl"}

// CheckBinaryDir refuses dir, a directory of control-plane binaries, when
// someone other than this user and root could change what runs there
// (ownership.CheckRun): dir and every directory above it up to / must
// belong to this user or root and be writable by no one else (a sticky
// directory such as /tmp above dir aside, never dir itself: who may add
// kube-apiserver-test there chooses the API server), and so must each
// binary there that a control plane may run (checkedBinaries), and where a
// symbolic link among them leads. The error names each path, what is wrong
// with it and the fix. Start checks Options.BinaryDir before it runs
// anything; a caller that runs a binary of dir before (its version flag)
// or hands dir to another start (controller-runtime's envtest) checks it
// first.
func CheckBinaryDir(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("the directory of control-plane binaries: %w", err)
	}
	var paths []string
	for _, name := range checkedBinaries {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil {
			paths = append(paths, p)
		}
	}
	var problems []error
	if len(paths) == 0 {
		problems = ownership.DirProblems(dir, dir)
	} else {
		problems = ownership.CheckRun(dir, paths...)
	}
	return ownership.Refuse("refusing the control-plane binaries in "+dir, problems, provideBinaries+"; "+clihint.Get())
}
