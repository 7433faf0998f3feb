package operatortest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/kind"
	"github.com/kubeharness/kubeharness/harness/versions"
)

const (
	// KindClusterName is the kind cluster's name unless $KIND_CLUSTER says
	// otherwise; its kubeconfig context is kind-<name>.
	KindClusterName = "kubeharness"
	// KindConfigFile is the cluster's kind configuration at the repository
	// root.
	KindConfigFile = "kind-config.yaml"
)

// NewKindCluster is this repository's kind cluster: named $KIND_CLUSTER or
// KindClusterName, made from kind-config.yaml, progress on out.
func NewKindCluster(root string, out io.Writer) *kind.Cluster {
	c := kind.New(kind.Name(KindClusterName), filepath.Join(root, KindConfigFile))
	c.Out = out
	return c
}

// UpKind creates c unless it exists, with the node images KindNodeImages
// names for the Kubernetes version sel asks for, and reports whether it
// created it. The version is resolved only when a cluster is to be made.
func UpKind(ctx context.Context, c *kind.Cluster, root string, sel versions.Selector, kubeconfig string, out io.Writer) (bool, error) {
	images, err := kindNodeImagesUnlessExists(ctx, c, root, sel, out)
	if err != nil {
		return false, err
	}
	return c.Up(ctx, images, kubeconfig)
}

// kindNodeImagesUnlessExists is KindNodeImages for a cluster that does not
// exist yet, and none for one that does: resolving a version may ask the
// Go module proxy, and an existing cluster needs no image.
func kindNodeImagesUnlessExists(ctx context.Context, c *kind.Cluster, root string, sel versions.Selector, out io.Writer) (kind.NodeImages, error) {
	exists, err := c.Exists()
	if err != nil || exists {
		return kind.NodeImages{}, err
	}
	return KindNodeImages(ctx, root, sel, out)
}

// KindNodeImages are the node images for the Kubernetes version sel asks
// for (as versions.Resolver resolves it): the stock kind image versions.yaml
// pins, else kubeharness/kind-node:v<version>, built (or found cached) by
// hack/kind-node-image.sh from the Go module proxy and Debian.
func KindNodeImages(ctx context.Context, root string, sel versions.Selector, out io.Writer) (kind.NodeImages, error) {
	res, err := binaries.NewResolver(root, out)
	if err != nil {
		return kind.NodeImages{}, err
	}
	v, err := res.Resolve(ctx, sel)
	if err != nil {
		return kind.NodeImages{}, err
	}
	entry, _ := res.Lock.Lookup(v)
	if entry.KindNode == "" {
		fmt.Fprintf(out, "versions.yaml pins no stock kind node image for Kubernetes %s\n", v)
	}
	return kind.NodeImages{
		Stock:   entry.KindNode,
		Offline: "kubeharness/kind-node:v" + v.String(),
		BuildOffline: func(ctx context.Context, image string, out io.Writer) error {
			fmt.Fprintln(out, "building it with hack/kind-node-image.sh (cached in Docker after the first time)")
			cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "kind-node-image.sh"))
			cmd.Env = append(os.Environ(), versions.EnvVar+"="+v.String(), "NODE_IMAGE="+image)
			cmd.Stdout, cmd.Stderr = out, out
			return cmd.Run()
		},
	}, nil
}
