package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// deployOptions are the flags of `kubeharness deploy` and `undeploy`.
type deployOptions struct {
	image, kubeContext string
	wait               bool
}

// newDeployCommand is `kubeharness deploy`.
func newDeployCommand() *cobra.Command {
	o := &deployOptions{}
	cmd := &cobra.Command{
		Use:   "deploy --image IMAGE",
		Short: "apply config/default to the current kubeconfig context",
		Long: `Server-side applies config/default (CRDs, namespace, RBAC, the manager's
Deployment, webhook Service and configurations) to the cluster of the current
kubeconfig context, with the manager running IMAGE, which the cluster must be
able to pull (for kind, make kind-up builds and loads it). Applying again
changes only what differs. --wait waits for the rollout and for the webhooks
to admit a dry-run Playbook.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDeploy(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.image, "image", os.Getenv("IMG"), "manager image (default: $IMG)")
	cmd.Flags().StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: the current one)")
	cmd.Flags().BoolVar(&o.wait, "wait", true, "wait for the rollout and the webhooks")
	return cmd
}

func runDeploy(ctx context.Context, o *deployOptions) error {
	if o.image == "" {
		return cli.UsageErrorf("name the manager image with --image or $IMG")
	}
	c, where, err := kubeClient(o.kubeContext)
	if err != nil {
		return err
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "deploying %s with manager image %s to %s\n", deploy.DefaultConfig, o.image, where)
	if err := deploy.Deploy(ctx, c, deploy.DeployOptions{Root: root, Image: o.image, Out: os.Stderr}); err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	return deploy.WaitForManager(ctx, c)
}

// newUndeployCommand is `kubeharness undeploy`.
func newUndeployCommand() *cobra.Command {
	o := &deployOptions{}
	cmd := &cobra.Command{
		Use:   "undeploy",
		Short: "delete what deploy applied",
		Long: `Deletes what deploy applied from the cluster of the current kubeconfig
context: webhook configurations first, the CRDs (and with them every Playbook
and AppService) last. It also deletes config/vm, the VirtualMachine
controller kind-up deploys, with its namespace and the Docker credentials in it.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return undeploy(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: the current one)")
	return cmd
}

func undeploy(ctx context.Context, o *deployOptions) error {
	c, where, err := kubeClient(o.kubeContext)
	if err != nil {
		return err
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "removing %s from %s (namespace %s)\n", deploy.VMConfig, where, deploy.VMNamespace)
	vmErr := deploy.UndeployVMController(ctx, c, root, os.Stderr)
	fmt.Fprintf(os.Stderr, "removing %s from %s (namespace %s)\n", deploy.DefaultConfig, where, certs.DefaultNamespace)
	return errors.Join(vmErr, deploy.Undeploy(ctx, c, root, os.Stderr))
}

// kubeClient is a client for a kubeconfig context, and a description of it.
func kubeClient(kubeContext string) (client.Client, string, error) {
	cfg, where, err := cluster.LoadKubeconfig("", kubeContext)
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	return c, where, err
}
