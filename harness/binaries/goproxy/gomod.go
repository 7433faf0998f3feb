package goproxy

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// KubeGoMod is what the harness needs from k8s.io/kubernetes's go.mod at
// one version: the etcd it depends on and its staging modules.
type KubeGoMod struct {
	// Etcd is the version of etcd's server module it requires ("v3.6.5"),
	// "" when it requires none.
	Etcd string
	// Staging are its staging modules, sorted.
	Staging []string
	// StagingErr, when not nil, is why Staging is unknown: the go.mod does
	// not parse strictly, and its replace lines are only read then.
	StagingErr error
}

// ParseKubeGoMod reads and parses k8s.io/kubernetes's go.mod at path, the
// copy in the module cache. Strictly, since only a strict parse keeps the
// replace lines that name the staging modules; should that fail, the go.mod
// is parsed again as the go command parses a dependency's (ignoring what it
// does not know), for its requirements alone.
func ParseKubeGoMod(path string, version versions.Version) (*KubeGoMod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading go.mod of Kubernetes %s: %w", version, err)
	}
	f, strictErr := modfile.Parse(path, data, nil)
	if strictErr != nil {
		lax, err := modfile.ParseLax(path, data, nil)
		if err != nil {
			return nil, err
		}
		etcd, _ := Requirement(lax, component.Etcd.Module)
		return &KubeGoMod{Etcd: etcd, StagingErr: strictErr}, nil
	}
	etcd, _ := Requirement(f, component.Etcd.Module)
	return &KubeGoMod{Etcd: etcd, Staging: stagingReplaces(f)}, nil
}

// ReadGoMod reads the go.mod at path and parses it strictly, as the go
// command parses its main module's: how build modules' go.mod files are
// read.
func ReadGoMod(path string) (*modfile.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(path, data, nil)
}

// Requirement returns the version f requires of module.
func Requirement(f *modfile.File, module string) (string, bool) {
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, true
		}
	}
	return "", false
}

// stagingReplaces lists, sorted, the modules f replaces with a directory
// below ./staging/: in k8s.io/kubernetes's go.mod, its staging modules.
func stagingReplaces(f *modfile.File) []string {
	var mods []string
	for _, r := range f.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			mods = append(mods, r.Old.Path)
		}
	}
	sort.Strings(mods)
	return mods
}

// StagingVersion is the published version of the staging modules that
// belong to Kubernetes version: 1.35.6 -> 0.35.6.
func StagingVersion(version versions.Version) versions.Version {
	return versions.New(0, version.Minor(), version.Patch())
}
