package binaries

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// LockfileName is the lockfile at the repository root.
const LockfileName = "versions.yaml"

// Lockfile is versions.yaml: the Kubernetes versions kubeharness is tested on.
type Lockfile struct {
	Default  string  `json:"default"`
	Versions []Entry `json:"versions"`
	// NodeImage pins what the offline kind node image is built from besides
	// the Kubernetes binaries (hack/kind-node-image.sh).
	NodeImage NodeImage `json:"nodeImage"`
}

// Entry pins what one Kubernetes version is built from.
type Entry struct {
	Kubernetes string `json:"kubernetes"`
	Etcd       string `json:"etcd"`
	// KindNode is the stock kind node image for this version, pinned by
	// digest; empty where kind publishes none.
	KindNode string `json:"kindNode,omitempty"`
	// Lanes are the CI lanes that test this version (Lanes: envtest, kind);
	// empty means every lane.
	Lanes []string `json:"lanes,omitempty"`
}

// The CI lanes a version can be tested in.
const (
	LaneEnvtest = "envtest"
	LaneKind    = "kind"
)

// Lanes are the CI lanes, as versions.yaml and `lockfile --lane` name them.
var Lanes = []string{LaneEnvtest, LaneKind}

// InLane reports whether the entry's version is tested in lane.
func (e Entry) InLane(lane string) bool {
	return len(e.Lanes) == 0 || slices.Contains(e.Lanes, lane)
}

// NodeImage pins the inputs of the offline kind node image that do not
// depend on the Kubernetes version.
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

// LoadLockfile reads versions.yaml below root.
func LoadLockfile(root string) (*Lockfile, error) {
	path := filepath.Join(root, LockfileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the version lockfile: %w", err)
	}
	var l Lockfile
	if err := yaml.UnmarshalStrict(data, &l); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if l.Default == "" {
		return nil, fmt.Errorf("%s: no default version; add e.g. `default: 1.37.1`", path)
	}
	for i, e := range l.Versions {
		if e.Kubernetes == "" || e.Etcd == "" {
			return nil, fmt.Errorf("%s: versions[%d] needs both kubernetes and etcd", path, i)
		}
		for _, lane := range e.Lanes {
			if !slices.Contains(Lanes, lane) {
				return nil, fmt.Errorf("%s: versions[%d].lanes: %q is not a lane; use %s (or leave lanes out for every lane)", path, i, lane, strings.Join(Lanes, " or "))
			}
		}
		if e.KindNode != "" && !strings.Contains(e.KindNode, "@sha256:") {
			return nil, fmt.Errorf("%s: versions[%d].kindNode %q is not pinned by digest; write it as kindest/node:vX.Y.Z@sha256:<digest>", path, i, e.KindNode)
		}
		l.Versions[i].Kubernetes = TrimV(e.Kubernetes)
		l.Versions[i].Etcd = TrimV(e.Etcd)
	}
	l.Default = TrimV(l.Default)
	n := &l.NodeImage
	if n.DebianSuite == "" || n.DebianMirror == "" || n.CNIPlugins == "" || n.LocalPathProvisioner == "" {
		return nil, fmt.Errorf("%s: nodeImage needs debianSuite, debianMirror, cniPlugins and localPathProvisioner", path)
	}
	n.CNIPlugins = TrimV(n.CNIPlugins)
	n.LocalPathProvisioner = TrimV(n.LocalPathProvisioner)
	return &l, nil
}

// Lookup returns the entry for a Kubernetes version.
func (l *Lockfile) Lookup(version string) (Entry, bool) {
	for _, e := range l.Versions {
		if e.Kubernetes == TrimV(version) {
			return e, true
		}
	}
	return Entry{}, false
}

// TrimV drops a leading "v": "v1.37.1" and "1.37.1" name the same version.
func TrimV(v string) string { return strings.TrimPrefix(strings.TrimSpace(v), "v") }

// Dir is where the binaries of a version are kept below the repository root:
// bin/k8s/<version>-<os>-<arch>, the store StoreDir lays out with root's
// bin/ as its bin-dir.
func Dir(root, version string) string {
	return StoreDir(filepath.Join(root, "bin"), version)
}

// StoreDir is where the binaries of a version are kept in a bin-dir, laid
// out as setup-envtest lays out its store: <binDir>/k8s/<version>-<os>-<arch>.
func StoreDir(binDir, version string) string {
	return filepath.Join(binDir, "k8s", fmt.Sprintf("%s-%s-%s", TrimV(version), runtime.GOOS, runtime.GOARCH))
}

// AssetsEnv is the environment variable that, when set, names the directory
// holding the binaries and wins over everything kubeharness builds.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Resolve returns the directory holding etcd and kube-apiserver for a
// patch version: $KUBEBUILDER_ASSETS when set, otherwise the build output
// below root. Either way the binaries are checked (CheckBinaries); the error
// says what is wrong and what to run. Resolver.Locate is the entry point
// for what a user asked for; this is for callers holding its result.
func Resolve(root, version string) (string, error) {
	ctx := context.Background()
	if env := os.Getenv(AssetsEnv); env != "" {
		if _, err := CheckBinaries(ctx, env, DefaultComponents...); err != nil {
			return "", fmt.Errorf("$%s: %v; put working binaries there, or unset %s to use the ones kubeharness builds", AssetsEnv, err, AssetsEnv)
		}
		return env, nil
	}
	version = TrimV(version)
	dir := Dir(root, version)
	build := buildCommand(version, nil)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("the binaries of Kubernetes %s are not built yet (no %s): run `%s`", version, dir, build)
	}
	got, err := CheckBinaries(ctx, dir, DefaultComponents...)
	if err != nil {
		return "", fmt.Errorf("the Kubernetes %s build is not usable: %v; run `%s`", version, err, build)
	}
	if got != version {
		return "", fmt.Errorf("%s holds Kubernetes %s, not %s; run `%s` to rebuild it", dir, got, version, build)
	}
	return dir, nil
}

// RepoRoot walks up from the working directory to the directory holding
// versions.yaml and go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, LockfileName)); err == nil {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s above %s: run from inside the kubeharness repository", LockfileName, dir)
		}
	}
}
