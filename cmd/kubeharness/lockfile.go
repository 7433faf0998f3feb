package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

func runLockfile(ctx context.Context, args []string) error {
	fs := newFlagSet("lockfile", `lockfile [--version V] --shell | --matrix

Prints what versions.yaml pins for Kubernetes version V as shell variable
assignments, for scripts and the Makefile: KUBE_VERSION, ETCD_VERSION,
KIND_NODE_IMAGE (the stock kind node image, pinned by digest; empty when
versions.yaml names none), and the offline node image's LOCK_DEBIAN_SUITE,
LOCK_DEBIAN_MIRROR and LOCK_CNI_PLUGINS. V defaults to $K8S_VERSION, then to
the default in versions.yaml; "1.36" means the newest 1.36 patch the Go module
proxy serves. --matrix prints every version versions.yaml lists as a JSON
array instead, for a CI job matrix.`)
	version := fs.String("version", os.Getenv("K8S_VERSION"), "Kubernetes version (default: $K8S_VERSION, then versions.yaml)")
	shell := fs.Bool("shell", false, "print shell variable assignments")
	matrix := fs.Bool("matrix", false, "print the versions versions.yaml lists, as a JSON array")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *shell == *matrix {
		fs.Usage()
		return fmt.Errorf("say --shell or --matrix")
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	lock, err := binaries.LoadLockfile(root)
	if err != nil {
		return err
	}
	if *matrix {
		versions := make([]string, len(lock.Versions))
		for i, e := range lock.Versions {
			versions[i] = e.Kubernetes
		}
		out, err := json.Marshal(versions)
		if err != nil {
			return err
		}
		fmt.Println(string(out))
		return nil
	}
	b := &binaries.Builder{Root: root}
	v, err := b.ResolveVersion(ctx, lock, *version)
	if err != nil {
		return err
	}
	etcd, err := b.EtcdVersion(ctx, lock, v)
	if err != nil {
		return err
	}
	entry, _ := lock.Lookup(v)
	for _, kv := range [][2]string{
		{"KUBE_VERSION", v},
		{"ETCD_VERSION", etcd},
		{"KIND_NODE_IMAGE", entry.KindNode},
		{"LOCK_DEBIAN_SUITE", lock.NodeImage.DebianSuite},
		{"LOCK_DEBIAN_MIRROR", lock.NodeImage.DebianMirror},
		{"LOCK_CNI_PLUGINS", lock.NodeImage.CNIPlugins},
	} {
		fmt.Printf("%s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
			continue
		}
		out += string(r)
	}
	return out + "'"
}
