package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

func runLockfile(ctx context.Context, args []string) error {
	return lockfile(ctx, args, os.Stdout)
}

// lockfile is `kubeharness lockfile`, printing to stdout.
func lockfile(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("lockfile", `lockfile [VERSION] [--version V] --shell | --matrix

Prints what versions.yaml pins for Kubernetes version V as shell variable
assignments, for scripts and the Makefile: KUBE_VERSION, ETCD_VERSION,
KIND_NODE_IMAGE (the stock kind node image, pinned by digest; empty when
versions.yaml names none), and the offline node image's LOCK_DEBIAN_SUITE,
LOCK_DEBIAN_MIRROR and LOCK_CNI_PLUGINS. V is the VERSION argument or
--version (give one, or both alike), else $K8S_VERSION, else the default in
versions.yaml; "1.36" means the newest 1.36 patch the Go module proxy serves.
--matrix prints every version versions.yaml lists as a JSON array instead,
for a CI job matrix.`)
	version := fs.String("version", "", "Kubernetes version (default: $"+binaries.VersionEnv+", then versions.yaml)")
	shell := fs.Bool("shell", false, "print shell variable assignments")
	matrix := fs.Bool("matrix", false, "print the versions versions.yaml lists, as a JSON array")
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *shell == *matrix {
		return usagef(fs, "say --shell or --matrix")
	}
	if *matrix && len(positional) > 0 {
		return usagef(fs, "unexpected arguments %q: lockfile --matrix takes none", positional)
	}
	arg, err := optionalVersion(fs, "lockfile --shell", positional)
	if err != nil {
		return err
	}
	req, err := versionRequest(fs, *version, arg)
	if err != nil {
		return err
	}
	if *matrix && req.Source != binaries.VersionEnv {
		return usagef(fs, "--matrix lists every version; it takes no --version")
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	lock := res.Lock
	if *matrix {
		versions := make([]string, len(lock.Versions))
		for i, e := range lock.Versions {
			versions[i] = e.Kubernetes
		}
		out, err := json.Marshal(versions)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(out))
		return nil
	}
	v, err := res.Resolve(ctx, req)
	if err != nil {
		return err
	}
	b := &binaries.Builder{Root: root}
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
		fmt.Fprintf(stdout, "%s=%s\n", kv[0], shellQuote(kv[1]))
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
