package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

// The setup-envtest-compatible subcommands of `kubeharness bins`: use, list
// and cleanup, over a store laid out as setup-envtest's
// (<bin-dir>/k8s/<version>-<os>-<arch>/).
var storeCommands = map[string]func(ctx context.Context, args []string, stdout io.Writer) error{
	"use":     binsUse,
	"list":    binsList,
	"cleanup": binsCleanup,
}

const binDirHelp = "the store: binaries go to <bin-dir>/k8s/<version>-<os>-<arch>/ (default: bin/ inside the kubeharness repository, else setup-envtest's default, ${XDG_DATA_HOME:-~/.local/share}/kubebuilder-envtest on Linux)"

// storeContext is where a store subcommand works: the repository root (""
// outside it) and the bin-dir.
type storeContext struct {
	root, binDir string
}

func newStoreContext(binDir string) (storeContext, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		root = "" // outside the repository: no versions.yaml, no hack/ modules
	}
	if binDir == "" {
		if root != "" {
			binDir = filepath.Join(root, "bin")
		} else if binDir, err = binaries.DefaultStoreDir(); err != nil {
			return storeContext{}, err
		}
	}
	if binDir, err = filepath.Abs(binDir); err != nil {
		return storeContext{}, err
	}
	return storeContext{root: root, binDir: binDir}, nil
}

// builder builds into the store, reusing what the repository's own store
// (bin/k8s) holds of the same version when the store is another one.
func (s storeContext) builder() *binaries.Builder {
	b := &binaries.Builder{Root: s.root, Store: s.binDir, Out: os.Stderr}
	if s.root != "" {
		if repo := filepath.Join(s.root, "bin"); repo != s.binDir {
			b.Reuse = repo
		}
	}
	return b
}

// openStore parses the arguments of bins list and cleanup (flags and an
// optional VERSION, a patch or a minor), and returns that VERSION, the store
// and what it holds.
func openStore(fs *flag.FlagSet, name string, args []string, binDir *string) (string, storeContext, []binaries.Installed, error) {
	positional, err := parseArgs(fs, args)
	if err != nil {
		return "", storeContext{}, nil, err
	}
	arg, err := optionalVersion(fs, "bins "+name, positional)
	if err != nil {
		return "", storeContext{}, nil, err
	}
	if _, err := binaries.Matches(arg, "0.0.0"); err != nil {
		return "", storeContext{}, nil, usagef(fs, "%v", err)
	}
	sc, err := newStoreContext(*binDir) // set by the parse above
	if err != nil {
		return "", storeContext{}, nil, err
	}
	installed, err := binaries.ListInstalled(sc.binDir)
	return arg, sc, installed, err
}

// optionalVersion is the VERSION argument of a command that takes at most
// one (empty when none was given); command names it in the usage error.
func optionalVersion(fs *flag.FlagSet, command string, positional []string) (string, error) {
	if len(positional) > 1 {
		return "", usagef(fs, "unexpected arguments %q: %s takes at most one, the VERSION", positional[1:], command)
	}
	if len(positional) == 1 {
		return positional[0], nil
	}
	return "", nil
}

// binsUse is `kubeharness bins use`, setup-envtest's `use`.
func binsUse(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("bins use", `bins use [VERSION] [-p overview|env|path] [--bin-dir DIR] [-i] [--use-env] [--with-controller-manager]

Makes sure the envtest binaries of Kubernetes VERSION (etcd, kube-apiserver and
kubectl, as setup-envtest installs them) are in the store, building them from
source through the Go module proxy when they are not, and prints where they
are. VERSION is a patch (1.37.1) or a minor (1.37: its newest patch the proxy
serves, or with -i the newest one installed); default $K8S_VERSION, then
versions.yaml's default inside the kubeharness repository (outside it, with
-i, the newest installed). Progress goes to standard error, so that

  export KUBEBUILDER_ASSETS=$(kubeharness bins use 1.37 -p path)

works. Inside the repository a store other than bin/ reuses bin/k8s's
binaries of the same version (hard links) instead of building them again.`)
	printMode := fs.String("p", "overview", "what to print: overview, env (an export KUBEBUILDER_ASSETS line) or path (the directory)")
	binDir := fs.String("bin-dir", "", binDirHelp)
	installedOnly := fs.Bool("i", false, "use only what the store holds: never build or ask the proxy")
	useEnv := fs.Bool("use-env", false, "use $KUBEBUILDER_ASSETS when it is set and holds working binaries")
	withKCM := fs.Bool("with-controller-manager", false, "install kube-controller-manager too")
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	arg, err := optionalVersion(fs, "bins use", positional)
	if err != nil {
		return err
	}
	switch *printMode {
	case "overview", "env", "path":
	default:
		return usagef(fs, "-p %q: want overview, env or path", *printMode)
	}
	req, err := versionRequest(fs, "", arg)
	if err != nil {
		return err
	}
	components := append([]binaries.Component{}, binaries.EnvtestComponents...)
	if *withKCM {
		components = append(components, binaries.KubeControllerManager)
	}
	sc, err := newStoreContext(*binDir)
	if err != nil {
		return err
	}
	dir, version, err := sc.use(ctx, req, components, *installedOnly, *useEnv)
	if err != nil {
		return err
	}
	switch *printMode {
	case "env":
		fmt.Fprintf(stdout, "export %s=%s\n", binaries.AssetsEnv, shellQuote(dir))
	case "path":
		fmt.Fprintln(stdout, dir)
	default:
		fmt.Fprintf(stdout, "Version: %s\nOS/Arch: %s/%s\nPath: %s\n", version, runtime.GOOS, runtime.GOARCH, dir)
	}
	return nil
}

func (sc storeContext) use(ctx context.Context, req binaries.Request, components []binaries.Component, installedOnly, useEnv bool) (dir, version string, err error) {
	if assets := os.Getenv(binaries.AssetsEnv); useEnv && assets != "" {
		got, err := binaries.CheckBinaries(ctx, assets, components...)
		ok := err == nil
		if ok {
			ok, err = binaries.Matches(req.Value, got)
		}
		if ok {
			fmt.Fprintf(os.Stderr, "using $%s=%s (Kubernetes %s)\n", binaries.AssetsEnv, assets, got)
			return assets, got, nil
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "not using $%s: %v\n", binaries.AssetsEnv, err)
		} else {
			fmt.Fprintf(os.Stderr, "not using $%s: it holds Kubernetes %s, not %s\n", binaries.AssetsEnv, got, req.Value)
		}
	}
	if installedOnly {
		if !req.Explicit() && sc.root != "" {
			if lock, err := binaries.LoadLockfile(sc.root); err == nil {
				req = binaries.Request{Value: lock.Default, Source: binaries.SourceDefault}
			}
		}
		in, err := binaries.FindInstalled(ctx, sc.binDir, req, components...)
		if err != nil {
			return "", "", fmt.Errorf("-i (installed only): %v; drop -i to build it from the Go module proxy", err)
		}
		return in.Dir, in.Version, nil
	}
	res, err := newResolver(sc.root)
	if err != nil {
		return "", "", err
	}
	version, err = res.Resolve(ctx, req)
	if err != nil {
		return "", "", err
	}
	dir, err = sc.builder().Build(ctx, version, components...)
	if err != nil {
		return "", "", err
	}
	return dir, version, nil
}

// binsList is `kubeharness bins list`, setup-envtest's `list`.
func binsList(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("bins list", `bins list [VERSION] [--bin-dir DIR] [-i]

Lists the Kubernetes versions the store holds, "(installed)", and, unless -i,
those that can be built from the Go module proxy, "(available)": inside the
repository the versions versions.yaml pins and the newest patch of each of
their minors, outside it the newest patch of each of the three newest minors
the proxy lists. VERSION (a patch or a minor) narrows the list.`)
	binDir := fs.String("bin-dir", "", binDirHelp)
	installedOnly := fs.Bool("i", false, "list only what the store holds: never ask the proxy")
	arg, sc, installed, err := openStore(fs, "list", args, binDir)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, in := range installed {
		if ok, _ := binaries.Matches(arg, in.Version); ok {
			fmt.Fprintf(stdout, "(installed)  v%-8s  %s/%s\n", in.Version, in.OS, in.Arch)
			if in.OS == runtime.GOOS && in.Arch == runtime.GOARCH {
				have[in.Version] = true
			}
		}
	}
	if *installedOnly {
		return nil
	}
	res, err := newResolver(sc.root)
	if err != nil {
		return err
	}
	res.Out = io.Discard
	var minors []string
	if arg != "" {
		minors = []string{strings.Join(strings.SplitN(strings.TrimSuffix(binaries.TrimV(arg), ".x"), ".", 3)[:2], ".")}
	} else if sc.root == "" {
		all, err := sc.builder().Releases(ctx)
		if err != nil {
			return err
		}
		minors = all[:min(3, len(all))]
	}
	for _, v := range res.BuildableOf(ctx, minors...) {
		if ok, _ := binaries.Matches(arg, v); ok && !have[v] {
			fmt.Fprintf(stdout, "(available)  v%-8s  %s/%s\n", v, runtime.GOOS, runtime.GOARCH)
		}
	}
	return nil
}

// binsCleanup is `kubeharness bins cleanup`, setup-envtest's `cleanup`.
func binsCleanup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("bins cleanup", `bins cleanup [VERSION] [--bin-dir DIR]

Removes the versions the store holds that VERSION (a patch or a minor) names,
every version when none is given (and then the build modules kept in
<bin-dir>/k8s/.src too), and prints what it removed.`)
	binDir := fs.String("bin-dir", "", binDirHelp)
	arg, sc, installed, err := openStore(fs, "cleanup", args, binDir)
	if err != nil {
		return err
	}
	removed := 0
	for _, in := range installed {
		if ok, _ := binaries.Matches(arg, in.Version); !ok {
			continue
		}
		if err := os.RemoveAll(in.Dir); err != nil {
			return err
		}
		removed++
		fmt.Fprintf(stdout, "removed v%s %s/%s (%s)\n", in.Version, in.OS, in.Arch, in.Dir)
	}
	if arg == "" {
		if err := os.RemoveAll(filepath.Join(sc.binDir, "k8s", ".src")); err != nil {
			return err
		}
	}
	if removed == 0 {
		fmt.Fprintf(os.Stderr, "nothing to remove in %s\n", filepath.Join(sc.binDir, "k8s"))
	}
	return nil
}
