package testbins

import "path/filepath"

// TemplateDir is where the harness's tests keep etcd templates
// (controlplane.Options.TemplateDir): bin/k8s/.etcd-templates below the
// repository's root, beside the binaries, where CI caches them.
func TemplateDir(root string) string {
	return filepath.Join(root, "bin", "k8s", ".etcd-templates")
}
