package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

func runBins(ctx context.Context, args []string) error {
	return bins(ctx, args, os.Stdout)
}

// bins is `kubeharness bins`, printing the directory to stdout.
func bins(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		if sub, ok := storeCommands[args[0]]; ok {
			return sub(ctx, args[1:], stdout)
		}
	}
	fs := newFlagSet("bins", `bins [VERSION] [--version V] [--with-controller-manager] [--node] [--print-dir]
       bins use [VERSION] [-p overview|env|path] [--bin-dir DIR] [-i]   (setup-envtest's interface)
       bins list [VERSION] [--bin-dir DIR] [-i]
       bins cleanup [VERSION] [--bin-dir DIR]

Builds etcd and kube-apiserver for Kubernetes version V from source through the
Go module proxy into bin/k8s/<V>-<os>-<arch>/. Nothing is built when the
binaries there already report V. V is the VERSION argument or --version (give
one, or both alike), else $K8S_VERSION, else the default in versions.yaml: a
patch (1.37.1, v1.37.1) or a minor (1.36, 1.36.x), which means the newest 1.36
patch the proxy serves; pre-releases are refused. When $KUBEBUILDER_ASSETS is
set it wins: nothing is built, and the binaries there are checked instead (they
must run and report a version, V when one is asked for).

use, list and cleanup work as setup-envtest's commands of those names, on a
store laid out as its (<bin-dir>/k8s/<V>-<os>-<arch>/), inside or outside the
kubeharness repository: run `+"`kubeharness bins use -h`"+` for their flags.`)
	version := fs.String("version", "", "Kubernetes version to build (default: $"+binaries.VersionEnv+", then versions.yaml)")
	withKCM := fs.Bool("with-controller-manager", false, "build kube-controller-manager too")
	node := fs.Bool("node", false, "build the node components too (kubelet, kubeadm, kubectl, kube-scheduler, kube-proxy), for a kind node image")
	printDir := fs.Bool("print-dir", false, "print only the binaries' directory on standard output (for KUBEBUILDER_ASSETS)")
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	arg, err := optionalVersion(fs, "bins", positional)
	if err != nil {
		return err
	}
	req, err := versionRequest(fs, *version, arg)
	if err != nil {
		return err
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	components := append([]binaries.Component{}, binaries.DefaultComponents...)
	if *withKCM || *node {
		components = append(components, binaries.KubeControllerManager)
	}
	if *node {
		components = append(components, binaries.NodeComponents...)
	}
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	if assets := os.Getenv(binaries.AssetsEnv); assets != "" {
		dir, v, err := res.Locate(ctx, root, req, components...)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s is set: using the binaries in %s (Kubernetes %s), building nothing\n", binaries.AssetsEnv, dir, v)
		if *printDir {
			fmt.Fprintln(stdout, dir)
		}
		return nil
	}
	v, err := res.Resolve(ctx, req)
	if err != nil {
		return err
	}
	b := &binaries.Builder{Root: root}
	dir, err := b.Build(ctx, v, components...)
	if err != nil {
		return err
	}
	if *printDir {
		fmt.Fprintln(stdout, dir)
		return nil
	}
	names := make([]string, len(components))
	for i, c := range components {
		names[i] = c.Name
	}
	fmt.Fprintf(os.Stderr, "%s ready in %s\n", strings.Join(names, ", "), dir)
	return nil
}
