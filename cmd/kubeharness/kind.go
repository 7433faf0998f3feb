package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/e2e/framework"
	app "github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/webhook/certs"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
	"github.com/kubeharness/kubeharness/e2e/framework/kindcluster"
)

const kindSynopsis = `kind <up|down|load|export-logs> [flags]

  up            create the kind cluster from kind-config.yaml unless it exists
                (kubeconfig context kind-<name>), then build the manager image,
                load it and deploy config/default (--deploy=false skips that);
                running it again redeploys only what changed
  down          delete the cluster; deleting one that does not exist is fine
  load IMAGE... load docker images into every node
  export-logs   write kind's logs of every node to --dir

The cluster is named $KIND_CLUSTER, else "kubeharness". Node image: the stock
kind image pinned in versions.yaml for $` + binaries.VersionEnv + ` when it can be pulled, the
offline image hack/kind-node-image.sh builds from the Go module proxy and
Debian otherwise; KIND_OFFLINE=1 goes straight to the offline image and
KIND_NODE_IMAGE names one to use as it is. Which one is used is printed.`

func runKind(ctx context.Context, args []string) error {
	fs := newFlagSet("kind", kindSynopsis)
	name := fs.String("name", kindcluster.Name(), "cluster name (default: $KIND_CLUSTER, then kubeharness)")
	version := fs.String("version", "", "Kubernetes version for up (default: $"+binaries.VersionEnv+", then versions.yaml)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file to write or clean (default: $KUBECONFIG, then ~/.kube/config)")
	dir := fs.String("dir", "artifacts/kind-logs", "where export-logs writes")
	deploy := fs.Bool("deploy", true, "up: build, load and deploy kubeharness and wait until its webhooks answer")
	if len(args) == 0 {
		fs.Usage()
		return errors.New("name a subcommand: up, down, load or export-logs")
	}
	sub := args[0]
	if sub == "-h" || sub == "--help" {
		fs.Usage()
		return nil
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	c := kindcluster.New(root, *name)
	switch sub {
	case "up":
		req, err := versionRequest(fs, *version, "")
		if err != nil {
			return err
		}
		if _, err := c.UpFor(ctx, req, *kubeconfig); err != nil {
			return err
		}
		if !*deploy {
			return nil
		}
		return deployToKind(ctx, c, root)
	case "down":
		return c.Delete(*kubeconfig)
	case "load":
		if fs.NArg() == 0 {
			return errors.New("name the docker images to load, e.g. kubeharness kind load kubeharness/manager:dev")
		}
		return c.LoadImages(ctx, fs.Args()...)
	case "export-logs":
		if err := c.ExportLogs(*dir); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "kind logs of %q in %s\n", *name, *dir)
		return nil
	}
	fs.Usage()
	return fmt.Errorf("unknown subcommand %q: want up, down, load or export-logs", sub)
}

func deployToKind(ctx context.Context, c *kindcluster.Cluster, root string) error {
	start := time.Now()
	cfg, err := framework.DeployToKind(ctx, c, root, os.Stderr)
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "waiting for %s/%s to roll out and its webhooks to answer\n", certs.DefaultNamespace, framework.ManagerDeployment)
	if err := framework.WaitForManager(ctx, cl); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kubeharness is running on kind cluster %q (%s): kubectl --context kind-%s -n %s get pods\n",
		c.Name, time.Since(start).Round(time.Second), c.Name, certs.DefaultNamespace)
	return nil
}
