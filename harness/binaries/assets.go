package binaries

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// AssetsEnv is the environment variable that, when set, names the directory
// holding the binaries and wins over everything kubeharness provides. The
// directory and its binaries must pass the trust rule every binary the
// harness runs passes (CheckBinaries, Lookup).
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Find returns the directory holding etcd and kube-apiserver of Kubernetes
// v, as Lookup finds and checks them, with the store's directory of v
// below root's bin/ last: $KUBEBUILDER_ASSETS when set (whatever version
// it holds), and so on. The error says what is wrong and what to run.
// Locate is the entry point for what a user asked for; Find is for callers
// holding the Version it returned.
func Find(root string, v versions.Version) (string, error) {
	f, err := Lookup(context.Background(), Where{Store: filepath.Join(root, "bin"),
		Resolve: func(context.Context, versions.Selector) (versions.Version, error) { return v, nil }})
	if err != nil {
		return "", err
	}
	return oneDir(f)
}

// oneDir is the one directory f's binaries are in; a control plane runs
// its binaries from one.
func oneDir(f Found) (string, error) {
	if f.Dir == "" {
		var where []string
		for name, path := range f.Paths {
			where = append(where, name+" "+path)
		}
		slices.Sort(where)
		return "", fmt.Errorf("the control-plane binaries are in several directories (%s): put them in one", strings.Join(where, ", "))
	}
	return f.Dir, nil
}

// Locate finds and checks the binaries (components) for what sel asks for
// (Lookup), and returns their directory and the Kubernetes version they
// report: what $KUBEBUILDER_ASSETS (and the rest of Lookup's order) names
// wins, nothing is resolved then, but when sel names a version its
// binaries must report it (a minor, any of its patches); otherwise the
// store below root's bin/ for the version res resolves sel to, whose
// missing binaries' error says what provides them.
func Locate(ctx context.Context, res *versions.Resolver, root string, sel versions.Selector, components ...Component) (string, versions.Version, error) {
	asked := ""
	f, err := Lookup(ctx, Where{Components: components, Store: filepath.Join(root, "bin"), Version: sel,
		Resolve: func(ctx context.Context, sel versions.Selector) (versions.Version, error) {
			v, err := res.Resolve(ctx, sel)
			if err == nil {
				asked = sel.String()
				if !sel.Explicit() {
					asked = fmt.Sprintf("%s %s", versions.SourceDefault, v)
				}
			}
			return v, err
		}})
	if err != nil {
		if asked != "" {
			err = fmt.Errorf("%s: %w", asked, err)
		}
		return "", versions.Version{}, err
	}
	dir, err := oneDir(f)
	return dir, f.Version, err
}
