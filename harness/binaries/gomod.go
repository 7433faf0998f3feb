package binaries

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// readGoMod reads the go.mod at path and parses it strictly, as the go
// command parses its main module's. It is how the build modules' go.mod
// files (committed under hack/ or generated in the store) are read;
// k8s.io/kubernetes's own is read by Builder.readKubeGoMod.
func readGoMod(path string) (*modfile.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(path, data, nil)
}

// requirement returns the version f requires of module.
func requirement(f *modfile.File, module string) (string, bool) {
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, true
		}
	}
	return "", false
}

// declaresTool reports whether f declares pkg as a tool. A generated build
// module that predates a component does not, and lacks the go.sum entries
// of its dependencies.
func declaresTool(f *modfile.File, pkg string) bool {
	for _, t := range f.Tool {
		if t.Path == pkg {
			return true
		}
	}
	return false
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

// stagingVersion is the published version of the staging modules that
// belong to Kubernetes version: 1.35.6 -> 0.35.6.
func stagingVersion(version versions.Version) versions.Version {
	return versions.New(0, version.Minor(), version.Patch())
}

// kubeGoMod is what kubeharness needs from k8s.io/kubernetes's go.mod at
// one version: the etcd it depends on (EtcdVersion) and its staging modules
// (checkComplete and the generated build module).
type kubeGoMod struct {
	// etcd is the version of Etcd.Module it requires ("v3.6.5"), "" when
	// it requires none.
	etcd string
	// staging are its staging modules, sorted.
	staging []string
	// stagingErr, when not nil, is why staging is unknown: the go.mod does
	// not parse strictly, and its replace lines are only read then.
	stagingErr error
}

// parseKubeGoMod reads and parses k8s.io/kubernetes's go.mod at path, the
// copy in the module cache. Strictly, since only a strict parse keeps the
// replace lines that name the staging modules; should that fail, the go.mod
// is parsed again as the go command parses a dependency's (ignoring what it
// does not know), for its requirements alone.
func parseKubeGoMod(path string, version versions.Version) (*kubeGoMod, error) {
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
		etcd, _ := requirement(lax, Etcd.Module)
		return &kubeGoMod{etcd: etcd, stagingErr: strictErr}, nil
	}
	etcd, _ := requirement(f, Etcd.Module)
	return &kubeGoMod{etcd: etcd, staging: stagingReplaces(f)}, nil
}

// stagingModules returns k8s.io/kubernetes's staging modules, or why its
// go.mod does not say.
func (m *kubeGoMod) stagingModules() ([]string, error) {
	return m.staging, m.stagingErr
}

// readKubeGoMod downloads k8s.io/kubernetes at version into the module
// cache and returns what its go.mod says. Each version's go.mod is
// downloaded and parsed once per Builder (a Resolver probing patches and a
// build of several components all ask); a failure is not remembered, so
// the next call tries again.
func (b *Builder) readKubeGoMod(ctx context.Context, version versions.Version) (*kubeGoMod, error) {
	b.mu.Lock()
	m, ok := b.kubeGoMods[version]
	b.mu.Unlock()
	if ok {
		return m, nil
	}
	path, err := b.download(ctx, KubeAPIServer.Module, version)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("go mod download named no go.mod for %s@v%s", KubeAPIServer.Module, version)
	}
	if m, err = parseKubeGoMod(path, version); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kubeGoMods == nil {
		b.kubeGoMods = map[versions.Version]*kubeGoMod{}
	}
	b.kubeGoMods[version] = m
	return m, nil
}
