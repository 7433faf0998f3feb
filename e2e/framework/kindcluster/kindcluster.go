// Package kindcluster creates, loads and deletes the kubeharness kind
// cluster through the sigs.k8s.io/kind Go API, and picks its node image: the
// stock kind node image pinned in versions.yaml when it can be pulled, the
// offline one built by hack/kind-node-image.sh otherwise.
package kindcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"

	"github.com/kubeharness/kubeharness/harness/binaries"
)

const (
	// DefaultName is the cluster's name unless $KIND_CLUSTER says otherwise;
	// its kubeconfig context is kind-<name>.
	DefaultName = "kubeharness"
	// ConfigFile is the cluster's kind configuration at the repository root.
	ConfigFile = "kind-config.yaml"
	// NameEnv names the cluster.
	NameEnv = "KIND_CLUSTER"
	// ImageEnv names a node image to use as it is.
	ImageEnv = "KIND_NODE_IMAGE"
	// OfflineEnv, when "1" or "true", skips the stock image and uses the
	// offline one.
	OfflineEnv = "KIND_OFFLINE"
	// readyTimeout bounds how long a new cluster may take to have every
	// node Ready.
	readyTimeout = 5 * time.Minute
	// pullTimeout bounds the attempt to pull the stock node image; behind a
	// firewall that drops packets, a pull would otherwise hang for minutes.
	pullTimeout = 3 * time.Minute
)

// Name is the cluster name: $KIND_CLUSTER, or DefaultName.
func Name() string {
	if n := os.Getenv(NameEnv); n != "" {
		return n
	}
	return DefaultName
}

// Cluster is one kind cluster.
type Cluster struct {
	// Name is the kind cluster name.
	Name string
	// Root is the repository root.
	Root string
	// Out receives progress; nil means os.Stderr.
	Out io.Writer

	provider *cluster.Provider
}

// New returns the cluster called name (not yet created).
func New(root, name string) *Cluster {
	return &Cluster{Name: name, Root: root, provider: cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindcmd.NewLogger()))}
}

func (c *Cluster) out() io.Writer {
	if c.Out == nil {
		return os.Stderr
	}
	return c.Out
}

// Exists reports whether the cluster exists.
func (c *Cluster) Exists() (bool, error) {
	names, err := c.provider.List()
	if err != nil {
		return false, fmt.Errorf("listing kind clusters (is Docker running? `make docker-up` starts it): %w", err)
	}
	return slices.Contains(names, c.Name), nil
}

// Create creates the cluster from kind-config.yaml with image, exporting its
// kubeconfig (context kind-<name>) to kubeconfig, or to $KUBECONFIG/~/.kube/config
// when empty, and waits until every node is Ready.
func (c *Cluster) Create(image, kubeconfig string) error {
	fmt.Fprintf(c.out(), "creating kind cluster %q from %s with node image %s\n", c.Name, ConfigFile, image)
	return c.provider.Create(c.Name,
		cluster.CreateWithConfigFile(filepath.Join(c.Root, ConfigFile)),
		cluster.CreateWithNodeImage(image),
		cluster.CreateWithKubeconfigPath(kubeconfig),
		cluster.CreateWithWaitForReady(readyTimeout),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	)
}

// Up creates the cluster with the node image SelectNodeImage picks for the
// Kubernetes version req asks for, unless the cluster exists, and reports
// whether it created it.
func (c *Cluster) Up(ctx context.Context, req binaries.Request, kubeconfig string) (created bool, err error) {
	exists, err := c.Exists()
	if err != nil {
		return false, err
	}
	if exists {
		fmt.Fprintf(c.out(), "kind cluster %q exists; using it (make kind-down deletes it)\n", c.Name)
		return false, nil
	}
	image, err := SelectNodeImage(ctx, c.Root, req, c.out())
	if err != nil {
		return false, err
	}
	if err := c.Create(image, kubeconfig); err != nil {
		return false, fmt.Errorf("creating kind cluster %q: %w", c.Name, err)
	}
	return true, nil
}

// Kubeconfig returns the cluster's kubeconfig for use from this host.
func (c *Cluster) Kubeconfig() ([]byte, error) {
	s, err := c.provider.KubeConfig(c.Name, false)
	return []byte(s), err
}

// Delete deletes the cluster and its kubeconfig entries; deleting a cluster
// that does not exist is not an error.
func (c *Cluster) Delete(kubeconfig string) error {
	return c.provider.Delete(c.Name, kubeconfig)
}

// ExportLogs writes kind's logs of every node (journal, kubelet,
// containerd, pods' logs, inspect output) below dir.
func (c *Cluster) ExportLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return c.provider.CollectLogs(c.Name, dir)
}

// LoadImages loads docker images into every node's containerd, as
// `kind load docker-image` does: one archive of them all, loaded once per
// node.
func (c *Cluster) LoadImages(ctx context.Context, images ...string) error {
	nodes, err := c.provider.ListInternalNodes(c.Name)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return fmt.Errorf("kind cluster %q has no nodes; create it first (make kind-up)", c.Name)
	}
	var archive, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", append([]string{"save"}, images...)...)
	cmd.Stdout, cmd.Stderr = &archive, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker save %s: %v: %s (build the images first, e.g. make docker-build)", strings.Join(images, " "), err, strings.TrimSpace(stderr.String()))
	}
	for _, n := range nodes {
		if err := nodeutils.LoadImageArchive(n, bytes.NewReader(archive.Bytes())); err != nil {
			return fmt.Errorf("loading %s into node %s: %w", strings.Join(images, " "), n.String(), err)
		}
	}
	fmt.Fprintf(c.out(), "loaded %s into %d nodes of %q\n", strings.Join(images, ", "), len(nodes), c.Name)
	return nil
}

// SelectNodeImage picks the node image for the Kubernetes version req asks
// for (as the binaries.Resolver resolves it) and says which and why:
//   - $KIND_NODE_IMAGE, used as it is;
//   - the stock image pinned in versions.yaml, when it can be pulled and
//     $KIND_OFFLINE is not set;
//   - otherwise the offline image, built (or found cached) by
//     hack/kind-node-image.sh.
func SelectNodeImage(ctx context.Context, root string, req binaries.Request, out io.Writer) (string, error) {
	if img := os.Getenv(ImageEnv); img != "" {
		fmt.Fprintf(out, "node image: %s (from $%s)\n", img, ImageEnv)
		return img, nil
	}
	res, err := binaries.NewResolver(root, out)
	if err != nil {
		return "", err
	}
	v, err := res.Resolve(ctx, req)
	if err != nil {
		return "", err
	}
	entry, _ := res.Lock.Lookup(v)
	offline := os.Getenv(OfflineEnv) == "1" || os.Getenv(OfflineEnv) == "true"
	switch {
	case offline:
		fmt.Fprintf(out, "$%s is set: not trying the stock node image\n", OfflineEnv)
	case entry.KindNode == "":
		fmt.Fprintf(out, "versions.yaml pins no stock kind node image for Kubernetes %s\n", v)
	default:
		if err := pull(ctx, entry.KindNode); err == nil {
			fmt.Fprintf(out, "node image: %s (stock, pinned in versions.yaml)\n", entry.KindNode)
			return entry.KindNode, nil
		} else {
			fmt.Fprintf(out, "cannot pull the stock node image %s: %v\n", entry.KindNode, err)
		}
	}
	image := "kubeharness/kind-node:v" + v
	fmt.Fprintf(out, "node image: %s (offline, built from the Go module proxy and Debian by hack/kind-node-image.sh)\n", image)
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "kind-node-image.sh"))
	cmd.Env = append(os.Environ(), binaries.VersionEnv+"="+v, "NODE_IMAGE="+image)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the offline node image: %w", err)
	}
	return image, nil
}

func pull(ctx context.Context, image string) error {
	if exec.CommandContext(ctx, "docker", "image", "inspect", image).Run() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "pull", "-q", image).CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("no answer within %s", pullTimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:]
		}
		return errors.New(msg)
	}
	return nil
}
