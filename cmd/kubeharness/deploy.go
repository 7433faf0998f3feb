package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/webhook/certs"
)

func runDeploy(ctx context.Context, args []string) error {
	fs := newFlagSet("deploy", `deploy --image IMAGE [--context NAME] [--wait]

Server-side applies config/default (CRDs, namespace, RBAC, the manager's
Deployment, webhook Service and configurations) to the cluster of the current
kubeconfig context, with the manager running IMAGE, which the cluster must be
able to pull (for kind, make kind-up builds and loads it). Applying again
changes only what differs. --wait waits for the rollout and for the webhooks
to admit a dry-run Playbook.`)
	image := fs.String("image", os.Getenv("IMG"), "manager image (default: $IMG)")
	kubeContext := fs.String("context", "", "kubeconfig context (default: the current one)")
	wait := fs.Bool("wait", true, "wait for the rollout and the webhooks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *image == "" {
		fs.Usage()
		return errors.New("name the manager image with --image or $IMG")
	}
	c, where, err := kubeClient(*kubeContext)
	if err != nil {
		return err
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "deploying %s with manager image %s to %s\n", framework.DefaultConfig, *image, where)
	if err := framework.Deploy(ctx, c, framework.DeployOptions{Root: root, Image: *image, Out: os.Stderr}); err != nil {
		return err
	}
	if !*wait {
		return nil
	}
	return framework.WaitForManager(ctx, c)
}

func runUndeploy(ctx context.Context, args []string) error {
	fs := newFlagSet("undeploy", `undeploy [--context NAME]

Deletes what deploy applied from the cluster of the current kubeconfig
context: webhook configurations first, the CRDs (and with them every Playbook
and AppService) last.`)
	kubeContext := fs.String("context", "", "kubeconfig context (default: the current one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, where, err := kubeClient(*kubeContext)
	if err != nil {
		return err
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "removing %s from %s (namespace %s)\n", framework.DefaultConfig, where, certs.DefaultNamespace)
	return framework.Undeploy(ctx, c, root, os.Stderr)
}

// kubeClient is a client for a kubeconfig context, and a description of it.
func kubeClient(kubeContext string) (client.Client, string, error) {
	cfg, where, err := framework.LoadKubeconfig("", kubeContext)
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	return c, where, err
}
