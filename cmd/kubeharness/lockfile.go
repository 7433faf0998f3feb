package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// lockfileOptions are the flags of `kubeharness lockfile`.
type lockfileOptions struct {
	version       string
	shell, matrix bool
	lane          string
}

// newLockfileCommand is `kubeharness lockfile`.
func newLockfileCommand() *cobra.Command {
	o := &lockfileOptions{}
	cmd := &cobra.Command{
		Use:   "lockfile [VERSION] (--shell | --matrix)",
		Short: "print what versions.yaml pins for a Kubernetes version, as shell variables",
		Long: `Prints what versions.yaml pins for Kubernetes version V as shell variable
assignments, for scripts and the Makefile: KUBE_VERSION, ETCD_VERSION,
KIND_NODE_IMAGE (the stock kind node image, pinned by digest; empty when
versions.yaml names none), and the offline node image's LOCK_DEBIAN_SUITE,
LOCK_DEBIAN_MIRROR, LOCK_CNI_PLUGINS and LOCK_LOCAL_PATH_PROVISIONER. V is the VERSION argument or
--version (give one, or both alike), else $K8S_VERSION, else the default in
versions.yaml; "1.36" means the newest 1.36 patch the Go module proxy serves.
--matrix prints every version versions.yaml lists as a JSON array instead,
for a CI job matrix; --lane=envtest or --lane=kind keeps the versions that
lane tests (versions.yaml's lanes; a version without lanes is in both).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.shell == o.matrix {
				return cli.UsageErrorf("say --shell or --matrix")
			}
			if o.lane != "" && !o.matrix {
				return cli.UsageErrorf("--lane picks versions for --matrix")
			}
			if o.lane != "" && !slices.Contains(repo.Lanes, o.lane) {
				return cli.UsageErrorf("--lane=%q: use %s", o.lane, strings.Join(repo.Lanes, " or "))
			}
			if o.matrix && len(args) > 0 {
				return cli.UsageErrorf("unexpected arguments %q: lockfile --matrix takes none", args)
			}
			if len(args) > 1 {
				return cli.UsageErrorf("unexpected arguments %q: lockfile --shell takes at most one, the VERSION", args[1:])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return lockfile(cmd.Context(), o, cli.FirstArg(args), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.version, "version", "", "Kubernetes version (default: $"+versions.EnvVar+", then versions.yaml)")
	cmd.Flags().BoolVar(&o.shell, "shell", false, "print shell variable assignments")
	cmd.Flags().BoolVar(&o.matrix, "matrix", false, "print the versions versions.yaml lists, as a JSON array")
	cmd.Flags().StringVar(&o.lane, "lane", "", "with --matrix, only the versions this CI lane tests: "+strings.Join(repo.Lanes, " or "))
	return cmd
}

// lockfile is `kubeharness lockfile`, printing to stdout.
func lockfile(ctx context.Context, o *lockfileOptions, arg string, stdout io.Writer) error {
	req, err := cli.VersionRequest(o.version, arg)
	if err != nil {
		return err
	}
	if o.matrix && req.Source() != versions.SourceEnv {
		return cli.UsageErrorf("--matrix lists every version; it takes no --version")
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	lock, err := repo.LoadLockfile(root)
	if err != nil {
		return err
	}
	if o.matrix {
		matrix := []versions.Version{}
		for _, e := range lock.Versions {
			if o.lane == "" || lock.InLane(e.Kubernetes, o.lane) {
				matrix = append(matrix, e.Kubernetes)
			}
		}
		if len(matrix) == 0 {
			return fmt.Errorf("versions.yaml lists no version for the %s lane", o.lane)
		}
		out, err := json.Marshal(matrix)
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
	etcd, err := binaries.EtcdVersion(ctx, lock.Lockfile, v, os.Stderr)
	if err != nil {
		return err
	}
	entry, _ := lock.Lookup(v)
	for _, kv := range [][2]string{
		{"KUBE_VERSION", v.String()},
		{"ETCD_VERSION", etcd.String()},
		{"KIND_NODE_IMAGE", entry.KindNode},
		{"LOCK_DEBIAN_SUITE", lock.NodeImage.DebianSuite},
		{"LOCK_DEBIAN_MIRROR", lock.NodeImage.DebianMirror},
		{"LOCK_CNI_PLUGINS", lock.NodeImage.CNIPlugins},
		{"LOCK_LOCAL_PATH_PROVISIONER", lock.NodeImage.LocalPathProvisioner},
	} {
		fmt.Fprintf(stdout, "%s=%s\n", kv[0], cli.ShellQuote(kv[1]))
	}
	return nil
}
