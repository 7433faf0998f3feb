package repo

import (
	"cmp"
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// ControlPlane completes o to start a control plane of this repository's
// binaries of Kubernetes v (versions.yaml's default when zero):
// BinaryDir is $KUBEBUILDER_ASSETS or bin/k8s/<v>-<os>-<arch>/ below root
// (binaries.Find), checked before any binary there runs, and TemplateDir
// is bin/k8s/.etcd-templates, beside the binaries, where CI caches the
// etcd templates.
func ControlPlane(root string, v versions.Version, o controlplane.Options) (controlplane.Options, error) {
	if v.IsZero() {
		lock, err := versions.LoadLockfile(root)
		if err != nil {
			return o, err
		}
		v = lock.Default
	}
	// binaries.Find runs each binary's version flag: the directory it
	// takes is checked before.
	if dir := cmp.Or(os.Getenv(binaries.AssetsEnv), binaries.Dir(root, v)); exists(dir) {
		if err := controlplane.CheckBinaryDir(dir); err != nil {
			return o, err
		}
	}
	dir, err := binaries.Find(root, v)
	if err != nil {
		return o, err
	}
	o.BinaryDir, o.TemplateDir = dir, TemplateDir(root)
	return o, nil
}

// TemplateDir is where this repository keeps etcd templates
// (controlplane.Options.TemplateDir): bin/k8s/.etcd-templates below root.
func TemplateDir(root string) string {
	return filepath.Join(root, "bin", "k8s", ".etcd-templates")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
