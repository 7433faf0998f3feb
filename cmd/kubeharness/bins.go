package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

func runBins(ctx context.Context, args []string) error {
	fs := newFlagSet("bins", `bins [--version V] [--with-controller-manager]

Builds etcd and kube-apiserver for Kubernetes version V from source through the
Go module proxy into bin/k8s/<V>-<os>-<arch>/. Nothing is built when the
binaries there already report V. V defaults to $K8S_VERSION, then to the
default in versions.yaml; "1.36" or "1.36.x" means the newest 1.36 patch the
proxy serves. When $KUBEBUILDER_ASSETS is set it wins: nothing is built and the
binaries there are checked instead.`)
	version := fs.String("version", os.Getenv("K8S_VERSION"), "Kubernetes version to build (default: $K8S_VERSION, then versions.yaml)")
	withKCM := fs.Bool("with-controller-manager", false, "build kube-controller-manager too")
	node := fs.Bool("node", false, "build the node components too (kubelet, kubeadm, kubectl, kube-scheduler, kube-proxy), for a kind node image")
	printDir := fs.Bool("print-dir", false, "print only the binaries' directory on standard output (for KUBEBUILDER_ASSETS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	if assets := os.Getenv(binaries.AssetsEnv); assets != "" {
		dir, err := binaries.Resolve(root, *version)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s is set: using the binaries in %s, building nothing\n", binaries.AssetsEnv, dir)
		if *printDir {
			fmt.Println(dir)
		}
		return nil
	}
	components := binaries.DefaultComponents
	if *withKCM || *node {
		components = append(components, binaries.KubeControllerManager)
	}
	if *node {
		components = append(components, binaries.NodeComponents...)
	}
	b := &binaries.Builder{Root: root}
	dir, err := b.Build(ctx, *version, components...)
	if err != nil {
		return err
	}
	if *printDir {
		fmt.Println(dir)
		return nil
	}
	names := make([]string, len(components))
	for i, c := range components {
		names[i] = c.Name
	}
	fmt.Fprintf(os.Stderr, "%s ready in %s\n", strings.Join(names, ", "), dir)
	return nil
}
