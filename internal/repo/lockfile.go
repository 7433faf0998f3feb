package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// The CI lanes a version can be tested in, as versions.yaml's lanes and
// `kubeharness lockfile --lane` name them.
const (
	LaneEnvtest = "envtest"
	LaneKind    = "kind"
)

// Lanes are the CI lanes.
var Lanes = []string{LaneEnvtest, LaneKind}

// NodeImage pins the inputs of the offline kind node image
// (hack/kind-node-image.sh) that do not depend on the Kubernetes version:
// versions.yaml's nodeImage.
type NodeImage struct {
	// DebianSuite is the Debian release the node's rootfs is bootstrapped from.
	DebianSuite string `json:"debianSuite"`
	// DebianMirror is the mirror debootstrap fetches it from.
	DebianMirror string `json:"debianMirror"`
	// CNIPlugins is the github.com/containernetworking/plugins version.
	CNIPlugins string `json:"cniPlugins"`
	// LocalPathProvisioner is the github.com/rancher/local-path-provisioner
	// version that provisions volumes for the default StorageClass, as on
	// stock kind.
	LocalPathProvisioner string `json:"localPathProvisioner"`
}

// NodeComponents are what the offline kind node image needs besides the
// control plane: the node agent, the cluster bootstrapper, kubectl, and
// the scheduler and proxy kubeadm runs as static Pods and a DaemonSet
// (`kubeharness bins --node`).
var NodeComponents = []binaries.Component{
	component.Kube("kubelet"), component.Kube("kubeadm"), binaries.Kubectl,
	component.Kube("kube-scheduler"), component.Kube("kube-proxy"),
}

// Lockfile is this repository's versions.yaml: what the library reads of
// it (versions.Lockfile: the default, each version's Kubernetes, etcd and
// stock kind node image) and what only this repository's tools read: the
// CI lanes of each version and the offline node image's inputs.
type Lockfile struct {
	*versions.Lockfile
	// NodeImage are the offline kind node image's inputs.
	NodeImage NodeImage
	// lanes are the lanes of each version listed, by Kubernetes version;
	// none means every lane.
	lanes map[versions.Version][]string
}

// lockfileText is the whole of versions.yaml, as LoadLockfile checks it.
type lockfileText struct {
	Default  string `json:"default"`
	Versions []struct {
		Kubernetes string   `json:"kubernetes"`
		Etcd       string   `json:"etcd"`
		KindNode   string   `json:"kindNode,omitempty"`
		Lanes      []string `json:"lanes,omitempty"`
	} `json:"versions"`
	NodeImage NodeImage `json:"nodeImage"`
}

// LoadLockfile reads versions.yaml below root as the library does
// (versions.LoadLockfile), and its keys of this repository's own, strictly:
// a key neither knows, a lane that is none of Lanes, or a node image input
// missing is an error.
func LoadLockfile(root string) (*Lockfile, error) {
	lock, err := versions.LoadLockfile(root)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, versions.LockfileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var text lockfileText
	if err := yaml.UnmarshalStrict(data, &text); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	l := &Lockfile{Lockfile: lock, NodeImage: text.NodeImage, lanes: map[versions.Version][]string{}}
	for i, e := range text.Versions {
		for _, lane := range e.Lanes {
			if !slices.Contains(Lanes, lane) {
				return nil, fmt.Errorf("%s: versions[%d].lanes: %q is not a lane; use %s (or leave lanes out for every lane)", path, i, lane, strings.Join(Lanes, " or "))
			}
		}
		l.lanes[lock.Versions[i].Kubernetes] = e.Lanes
	}
	n := &l.NodeImage
	if n.DebianSuite == "" || n.DebianMirror == "" || n.CNIPlugins == "" || n.LocalPathProvisioner == "" {
		return nil, fmt.Errorf("%s: nodeImage needs debianSuite, debianMirror, cniPlugins and localPathProvisioner", path)
	}
	n.CNIPlugins = strings.TrimPrefix(strings.TrimSpace(n.CNIPlugins), "v")
	n.LocalPathProvisioner = strings.TrimPrefix(strings.TrimSpace(n.LocalPathProvisioner), "v")
	return l, nil
}

// InLane reports whether version v, one versions.yaml lists, is tested in
// lane: a version without lanes is in every lane.
func (l *Lockfile) InLane(v versions.Version, lane string) bool {
	lanes := l.lanes[v]
	return len(lanes) == 0 || slices.Contains(lanes, lane)
}

// Lanes are the lanes of version v as versions.yaml lists them; none means
// every lane.
func (l *Lockfile) Lanes(v versions.Version) []string { return l.lanes[v] }
