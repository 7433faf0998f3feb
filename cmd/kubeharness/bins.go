package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// binsOptions are the flags of `kubeharness bins`.
type binsOptions struct {
	version                              string
	withKCM, withKubectl, node, printDir bool
}

// newBinsCommand is `kubeharness bins [VERSION]` and its setup-envtest
// subcommands use, list and cleanup.
func newBinsCommand() *cobra.Command {
	o := &binsOptions{}
	// The library's bins (use, list, cleanup) made runnable with this
	// repository's store and components.
	cmd := cli.NewBinsCommand(options())
	cmd.Use = "bins [VERSION]"
	cmd.Short = "download or build etcd, kube-apiserver (and build kube-controller-manager) for a Kubernetes version; use, list, cleanup: setup-envtest's interface, in any project"
	cmd.Long = `Provides etcd and kube-apiserver for Kubernetes version V in
bin/k8s/<V>-<os>-<arch>/: downloaded from the official envtest archive, or
built from source through the Go module proxy, as $` + binaries.ModeEnv + ` says
(auto, the default: download, and build when that fails; download; build).
kube-controller-manager and the node components are built: the archive lacks
them. Nothing is provided when the binaries there already report V. V is the
VERSION argument or --version (give one, or both alike), else $K8S_VERSION,
else the default in versions.yaml: a patch (1.37.1, v1.37.1) or a minor (1.36,
1.36.x), which means the newest 1.36 patch the proxy serves; pre-releases are
refused. When $KUBEBUILDER_ASSETS is set it wins: nothing is provided, and the
binaries there are checked instead (they must run and report a version, V when
one is asked for).

use, list and cleanup work as setup-envtest's commands of those names, on a
store laid out as its (<bin-dir>/k8s/<V>-<os>-<arch>/), inside or outside the
kubeharness repository: run 'kubeharness bins use --help' for their flags and
for where the binaries come from.`
	cmd.Args = binsArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return bins(cmd.Context(), o, cli.FirstArg(args), cmd.OutOrStdout())
	}
	cmd.Flags().StringVar(&o.version, "version", "", "Kubernetes version to provide (default: $"+versions.EnvVar+", then versions.yaml)")
	cmd.Flags().BoolVar(&o.withKCM, "with-controller-manager", false, "build kube-controller-manager too (the envtest archive lacks it)")
	cmd.Flags().BoolVar(&o.withKubectl, "with-kubectl", false, "provide kubectl too (in the envtest archive; kubeharness env up's environments hand it out)")
	cmd.Flags().BoolVar(&o.node, "node", false, "build the node components too (kubelet, kubeadm, kubectl, kube-scheduler, kube-proxy), for a kind node image")
	cmd.Flags().BoolVar(&o.printDir, "print-dir", false, "print only the binaries' directory on standard output (for KUBEBUILDER_ASSETS)")
	return cmd
}

// binsArgs takes at most one argument, the VERSION (empty is none); a word
// that cannot be one is taken for a mistyped subcommand.
func binsArgs(cmd *cobra.Command, args []string) error {
	if err := cli.OptionalVersion(cmd, args); err != nil {
		return err
	}
	if len(args) == 1 {
		if v := strings.TrimPrefix(strings.TrimSpace(args[0]), "v"); v != "" && (v[0] < '0' || v[0] > '9') {
			return cli.UnknownCommand(cmd, args[0])
		}
	}
	return nil
}

// bins is `kubeharness bins`: `bins use` (useBinaries) on the
// repository's store, its components as the flags say, with
// $KUBEBUILDER_ASSETS, when set, winning; it prints the directory to
// stdout with --print-dir.
func bins(ctx context.Context, o *binsOptions, arg string, stdout io.Writer) error {
	req, err := cli.VersionRequest(o.version, arg)
	if err != nil {
		return err
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	components := append([]binaries.Component{}, binaries.DefaultComponents...)
	if o.withKCM || o.node {
		components = append(components, binaries.KubeControllerManager)
	}
	if o.withKubectl && !o.node {
		components = append(components, binaries.Kubectl)
	}
	if o.node {
		components = append(components, repo.NodeComponents...)
	}
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	printMode := "ready"
	if o.printDir {
		printMode = "path"
	}
	return cli.UseBinaries(ctx, repo.Store(root), req, binaries.UseOptions{Components: components, EnvWins: true, Resolver: res}, printMode, stdout)
}
