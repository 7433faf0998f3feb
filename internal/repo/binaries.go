package repo

import (
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/binaries"
)

// buildModules are the build modules this repository keeps below its root,
// by the module they build: each requires the version versions.yaml pins
// as its default and declares every component's main package as a tool,
// so that CI builds the pinned version from a go.sum under review.
var buildModules = map[string]string{
	binaries.KubeAPIServer.Module: filepath.Join("hack", "controlplane"),
	binaries.Etcd.Module:          filepath.Join("hack", "controlplane", "etcd"),
}

// BuildModules are the build modules below root that the Go module build
// uses when one requires the version asked for
// (binaries.Store.BuildModules, gobuild.Source.Modules); nil for a root
// that keeps none (another project, whose modules are generated in the
// store).
func BuildModules(root string) map[string]string {
	var mods map[string]string
	for module, dir := range buildModules {
		if _, err := os.Stat(filepath.Join(root, dir, "go.mod")); err != nil {
			continue
		}
		if mods == nil {
			mods = map[string]string{}
		}
		mods[module] = filepath.Join(root, dir)
	}
	return mods
}

// Store is this repository's store of binaries, bin/ below root, with
// versions.yaml's pins and the repository's build modules.
func Store(root string) binaries.Store {
	return binaries.Store{Root: root, Dir: filepath.Join(root, "bin"), BuildModules: BuildModules(root)}
}
