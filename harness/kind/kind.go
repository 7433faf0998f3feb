package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"
)

const (
	// NameEnv names the cluster, as in kubebuilder's Makefile.
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

// Name is the cluster name: $KIND_CLUSTER, or def.
func Name(def string) string {
	if n := os.Getenv(NameEnv); n != "" {
		return n
	}
	return def
}

// Cluster is one kind cluster.
type Cluster struct {
	// Name is the kind cluster name.
	Name string
	// ConfigFile is the kind configuration (kind.x-k8s.io/v1alpha4) the
	// cluster is created from; empty means kind's default single node.
	ConfigFile string
	// Out receives progress; nil means os.Stderr.
	Out io.Writer

	provider *cluster.Provider
}

// New returns the cluster called name, created from configFile (not yet
// created).
func New(name, configFile string) *Cluster {
	return &Cluster{Name: name, ConfigFile: configFile, provider: cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindcmd.NewLogger()))}
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
		return false, fmt.Errorf("listing kind clusters: %w (kind runs its nodes as Docker containers: install Docker and start its daemon, or set DOCKER_HOST to a daemon that runs)", err)
	}
	return slices.Contains(names, c.Name), nil
}

// Create creates the cluster from ConfigFile with image, exporting its
// kubeconfig (context kind-<name>) to kubeconfig, or to $KUBECONFIG/~/.kube/config
// when empty, and waits until every node is Ready.
func (c *Cluster) Create(image, kubeconfig string) error {
	opts := []cluster.CreateOption{
		cluster.CreateWithNodeImage(image),
		cluster.CreateWithKubeconfigPath(kubeconfig),
		cluster.CreateWithWaitForReady(readyTimeout),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	}
	from := "kind's default configuration"
	if c.ConfigFile != "" {
		opts = append(opts, cluster.CreateWithConfigFile(c.ConfigFile))
		from = c.ConfigFile
	}
	fmt.Fprintf(c.out(), "creating kind cluster %q from %s with node image %s\n", c.Name, from, image)
	return c.provider.Create(c.Name, opts...)
}

// Up creates the cluster with the node image images.Select picks, unless
// the cluster exists, and reports whether it created it.
func (c *Cluster) Up(ctx context.Context, images NodeImages, kubeconfig string) (created bool, err error) {
	exists, err := c.Exists()
	if err != nil {
		return false, err
	}
	if exists {
		fmt.Fprintf(c.out(), "kind cluster %q exists; using it (kind delete cluster --name %s deletes it)\n", c.Name, c.Name)
		return false, nil
	}
	image, err := images.Select(ctx, c.out())
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
		return fmt.Errorf("kind cluster %q has no nodes: create it first (Cluster.Up, or kind create cluster --name %s)", c.Name, c.Name)
	}
	var archive, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", append([]string{"save"}, images...)...)
	cmd.Stdout, cmd.Stderr = &archive, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker save %s: %v: %s (each image must be in the local Docker daemon: build or pull it first; docker images lists them)", strings.Join(images, " "), err, strings.TrimSpace(stderr.String()))
	}
	for _, n := range nodes {
		if err := nodeutils.LoadImageArchive(n, bytes.NewReader(archive.Bytes())); err != nil {
			return fmt.Errorf("loading %s into node %s: %w", strings.Join(images, " "), n.String(), err)
		}
	}
	fmt.Fprintf(c.out(), "loaded %s into %d nodes of %q\n", strings.Join(images, ", "), len(nodes), c.Name)
	return nil
}

// NodeImages are the node images a cluster may be made from, in the order
// Select tries them.
type NodeImages struct {
	// Stock is a published node image (kindest/node:v1.37.1@sha256:…),
	// used when it is present or can be pulled; empty skips it.
	Stock string
	// Offline is the image to use when the stock one cannot be had.
	Offline string
	// BuildOffline builds Offline, or finds it built; nil means Offline is
	// expected to exist already.
	BuildOffline func(ctx context.Context, image string, out io.Writer) error
}

// Select picks the node image and says which and why on out:
//   - $KIND_NODE_IMAGE, used as it is;
//   - Stock, when it can be pulled and $KIND_OFFLINE is not set;
//   - otherwise Offline, built by BuildOffline.
func (n NodeImages) Select(ctx context.Context, out io.Writer) (string, error) {
	if img := os.Getenv(ImageEnv); img != "" {
		fmt.Fprintf(out, "node image: %s (from $%s)\n", img, ImageEnv)
		return img, nil
	}
	offline := os.Getenv(OfflineEnv) == "1" || os.Getenv(OfflineEnv) == "true"
	switch {
	case offline:
		fmt.Fprintf(out, "$%s is set: not trying the stock node image\n", OfflineEnv)
	case n.Stock == "":
		fmt.Fprintln(out, "no stock node image is pinned")
	default:
		err := pull(ctx, n.Stock)
		if err == nil {
			fmt.Fprintf(out, "node image: %s (stock)\n", n.Stock)
			return n.Stock, nil
		}
		fmt.Fprintf(out, "cannot pull the stock node image %s: %v\n", n.Stock, err)
	}
	if n.Offline == "" {
		return "", fmt.Errorf("no node image: the stock one cannot be had and no offline one is named; set $%s to an image", ImageEnv)
	}
	fmt.Fprintf(out, "node image: %s (offline)\n", n.Offline)
	if n.BuildOffline != nil {
		if err := n.BuildOffline(ctx, n.Offline, out); err != nil {
			return "", fmt.Errorf("building the offline node image %s: %w", n.Offline, err)
		}
	}
	return n.Offline, nil
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
