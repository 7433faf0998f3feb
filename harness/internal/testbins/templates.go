package testbins

import "path/filepath"

// TemplateDir is where the harness's tests keep etcd templates
// (controlplane.Options.TemplateDir): bin/k8s/.etcd-templates below the
// repository's root, beside the binaries, where CI caches them. Without a
// root (binaries from $KUBEBUILDER_ASSETS, the harness module tested on
// its own) it is empty: controlplane's default, the user's cache, and
// never a directory below the package under test.
func TemplateDir(root string) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, "bin", "k8s", ".etcd-templates")
}
