package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/operator/certs"

	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/kind"
	"github.com/kubeharness/kubeharness/harness/versions"
)

const kindLong = `Creates, deletes, loads images into and exports the logs of the kind cluster.

The cluster is named $KIND_CLUSTER, else "kubeharness". Node image: the stock
kind image pinned in versions.yaml for $` + versions.EnvVar + ` when it can be pulled, the
offline image hack/kind-node-image.sh builds from the Go module proxy and
Debian otherwise; KIND_OFFLINE=1 goes straight to the offline image and
KIND_NODE_IMAGE names one to use as it is. Which one is used is printed.`

// kindOptions are the flags of `kubeharness kind` and its subcommands.
type kindOptions struct {
	name, version, kubeconfig, dir string
	deploy                         bool
}

// newKindCommand is `kubeharness kind`: up, down, load and export-logs.
func newKindCommand() *cobra.Command {
	o := &kindOptions{}
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "create (up), delete (down), load images into or export logs of the kind cluster",
		Long:  kindLong,
	}
	cmd.PersistentFlags().StringVar(&o.name, "name", kind.Name(operatortest.KindClusterName), "cluster name (default: $KIND_CLUSTER, then kubeharness)")
	kubeconfigFlag := func(c *cobra.Command) {
		c.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file to write or clean (default: $KUBECONFIG, then ~/.kube/config)")
	}

	up := &cobra.Command{
		Use:   "up",
		Short: "create the cluster unless it exists, then build, load and deploy kubeharness",
		Long: `Creates the kind cluster from kind-config.yaml unless it exists (kubeconfig
context kind-<name>), then builds the manager image, loads it and deploys
config/default (--deploy=false skips that); running it again redeploys only
what changed.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kindUp(cmd.Context(), o)
		},
	}
	up.Flags().StringVar(&o.version, "version", "", "Kubernetes version (default: $"+versions.EnvVar+", then versions.yaml)")
	up.Flags().BoolVar(&o.deploy, "deploy", true, "build, load and deploy kubeharness and wait until its webhooks answer")
	kubeconfigFlag(up)

	down := &cobra.Command{
		Use:   "down",
		Short: "delete the cluster; deleting one that does not exist is fine",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newKindCluster(o)
			if err != nil {
				return err
			}
			return c.Delete(o.kubeconfig)
		},
	}
	kubeconfigFlag(down)

	load := &cobra.Command{
		Use:   "load IMAGE...",
		Short: "load docker images into every node",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.UsageErrorf("name the docker images to load, e.g. kubeharness kind load kubeharness/manager:dev")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newKindCluster(o)
			if err != nil {
				return err
			}
			return c.LoadImages(cmd.Context(), args...)
		},
	}

	exportLogs := &cobra.Command{
		Use:   "export-logs",
		Short: "write kind's logs of every node to --dir",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newKindCluster(o)
			if err != nil {
				return err
			}
			if err := c.ExportLogs(o.dir); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "kind logs of %q in %s\n", o.name, o.dir)
			return nil
		},
	}
	exportLogs.Flags().StringVar(&o.dir, "dir", "artifacts/kind-logs", "where export-logs writes")

	cmd.AddCommand(up, down, load, exportLogs)
	return cmd
}

func newKindCluster(o *kindOptions) (*kind.Cluster, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	c := kind.New(o.name, filepath.Join(root, operatortest.KindConfigFile))
	c.Out = os.Stderr
	return c, nil
}

// kindUp is `kubeharness kind up`.
func kindUp(ctx context.Context, o *kindOptions) error {
	req, err := cli.VersionRequest(o.version, "")
	if err != nil {
		return err
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	c, err := newKindCluster(o)
	if err != nil {
		return err
	}
	if _, err := operatortest.UpKind(ctx, c, root, req, o.kubeconfig, os.Stderr); err != nil {
		return err
	}
	if !o.deploy {
		return nil
	}
	return deployToKind(ctx, c, root)
}

func deployToKind(ctx context.Context, c *kind.Cluster, root string) error {
	start := time.Now()
	cfg, err := deploy.ToKind(ctx, c, root, os.Stderr)
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "waiting for %s/%s to roll out and its webhooks to answer\n", certs.DefaultNamespace, deploy.ManagerDeployment)
	if err := deploy.WaitForManager(ctx, cl); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kubeharness is running on kind cluster %q (%s): kubectl --context kind-%s -n %s get pods\n",
		c.Name, time.Since(start).Round(time.Second), c.Name, certs.DefaultNamespace)
	return nil
}
