package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// The setup-envtest-compatible subcommands of `kubeharness bins`: use, list
// and cleanup, over a store laid out as setup-envtest's
// (<bin-dir>/k8s/<version>-<os>-<arch>/). Their flags are setup-envtest's:
// -p and -i (also --print and --installed-only here) and --bin-dir.

// storeOptions are the flags of bins use, list and cleanup.
type storeOptions struct {
	binDir, printMode              string
	installedOnly, useEnv, withKCM bool
	// version is the VERSION argument of list and cleanup (storeArgs).
	version versions.Selector
}

const binDirHelp = "the store: binaries go to <bin-dir>/k8s/<version>-<os>-<arch>/ (default: bin/ of a project with a versions.yaml beside its go.mod, else setup-envtest's default, ${XDG_DATA_HOME:-~/.local/share}/kubebuilder-envtest on Linux)"

// storeArgs are the arguments of bins list and cleanup: at most one, the
// VERSION (a patch or a minor), parsed into o.version; none is every
// version.
func storeArgs(o *storeOptions) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := OptionalVersion(cmd, args); err != nil {
			return err
		}
		var err error
		if o.version, err = versions.ParseSelector(FirstArg(args), versions.SourceArg); err != nil {
			return UsageErrorf("%v", err)
		}
		return nil
	}
}

// NewBinsCommand is `kubeharness bins`, which holds use, list and
// cleanup: setup-envtest's commands of those names, in any project.
func NewBinsCommand(o Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bins",
		Short: "provide the envtest binaries of a Kubernetes version: use, list, cleanup (setup-envtest's interface, in any project)",
		Long: `use, list and cleanup work as setup-envtest's commands of those names, on a
store laid out as its (<bin-dir>/k8s/<V>-<os>-<arch>/): the binaries are
downloaded from the official envtest archive or built from source through
the Go module proxy. Run 'kubeharness bins use --help' for their flags and
for where the binaries come from.`,
	}
	cmd.AddCommand(newBinsUseCommand(o), newBinsListCommand(o), newBinsCleanupCommand(o))
	return cmd
}

// openStore is the store of bins use, list and cleanup: o.OpenStore's,
// else binaries.OpenStore's: --bin-dir, else bin/ of the project the
// working directory is in, else setup-envtest's default.
func (o Options) openStore(binDir string) (binaries.Store, error) {
	if o.OpenStore != nil {
		return o.OpenStore(binDir)
	}
	return binaries.OpenStore(binDir)
}

// newBinsUseCommand is `kubeharness bins use`, setup-envtest's `use`.
func newBinsUseCommand(opts Options) *cobra.Command {
	o := &storeOptions{}
	cmd := &cobra.Command{
		Use:   "use [VERSION]",
		Short: "make sure the envtest binaries of a version are in the store and print where (setup-envtest use)",
		Long: `Makes sure the envtest binaries of Kubernetes VERSION (etcd, kube-apiserver and
kubectl, as setup-envtest installs them) are in the store, downloading or
building those it lacks, and prints where they are. VERSION is a patch
(1.37.1) or a minor (1.37: its newest patch the proxy serves, or with -i the
newest one installed); default $K8S_VERSION, then the default of the versions.yaml
beside the go.mod of the project you are in, if any (else, with -i, the
newest installed). Progress goes to standard error, so that

  export KUBEBUILDER_ASSETS=$(kubeharness bins use 1.37 -p path)

works. In a project with a versions.yaml, a store other than its bin/ reuses
bin/k8s's binaries of the same version (hard links) instead of providing
them again.

Where a missing binary comes from is $` + binaries.ModeEnv + `:
  auto      (the default) the official envtest archive of VERSION, as
            setup-envtest downloads it: its sha512 is checked against the
            index before anything is installed. When the index cannot be
            reached (within seconds), lacks VERSION, or the archive fails
            its check, the binary is built from source through the Go
            module proxy instead, in minutes.
  download  the envtest archive; fail when that fails.
  build     a build from the Go module proxy; nothing else is contacted.
The archive holds etcd, kube-apiserver and kubectl only: kube-controller-manager
is built in every mode. Standard error says, per binary, which way it came and,
when built, why; 'kubeharness bins list' says which binaries were downloaded and
which built. A binary already in the store that reports VERSION stays, however
it came; in build mode an etcd downloaded with Kubernetes is built again when
versions.yaml pins another.

$` + binaries.IndexEnv + ` names another index than controller-tools'
(` + binaries.DefaultIndexURL + `),
a mirror: its archives' selfLinks may be relative to it.`,
		Args: OptionalVersion,
		RunE: func(cmd *cobra.Command, args []string) error {
			return binsUse(cmd.Context(), opts, o, FirstArg(args), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&o.printMode, "print", "p", "overview", "what to print: overview, env (an export KUBEBUILDER_ASSETS line) or path (the directory)")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", binDirHelp)
	cmd.Flags().BoolVarP(&o.installedOnly, "installed-only", "i", false, "use only what the store holds: never download, build or ask the proxy")
	cmd.Flags().BoolVar(&o.useEnv, "use-env", false, "use $KUBEBUILDER_ASSETS when it is set and holds working binaries")
	cmd.Flags().BoolVar(&o.withKCM, "with-controller-manager", false, "install kube-controller-manager too (built: the envtest archive lacks it)")
	return cmd
}

// binsUse is `kubeharness bins use`, printing to stdout.
func binsUse(ctx context.Context, opts Options, o *storeOptions, arg string, stdout io.Writer) error {
	switch o.printMode {
	case "overview", "env", "path":
	default:
		return UsageErrorf("-p %q: want overview, env or path", o.printMode)
	}
	req, err := VersionRequest("", arg)
	if err != nil {
		return err
	}
	components := append([]binaries.Component{}, binaries.EnvtestComponents...)
	if o.withKCM {
		components = append(components, binaries.KubeControllerManager)
	}
	st, err := opts.openStore(o.binDir)
	if err != nil {
		return err
	}
	use := binaries.UseOptions{Components: components, InstalledOnly: o.installedOnly, UseEnv: o.useEnv}
	if !o.installedOnly {
		if use.Resolver, err = opts.resolver(st.Root); err != nil {
			return err
		}
	}
	return UseBinaries(ctx, st, req, use, o.printMode, stdout)
}

// UseBinaries is `kubeharness bins use`: st.Use, the etcd templates
// beside the binaries (prepareTemplates), then what printMode says on
// stdout: overview, env (an export line), path, or ready (nothing on
// stdout; which binaries are ready where on standard error).
func UseBinaries(ctx context.Context, st binaries.Store, req versions.Selector, opts binaries.UseOptions, printMode string, stdout io.Writer) error {
	dir, version, err := st.Use(ctx, req, opts)
	if err != nil {
		return err
	}
	prepareTemplates(ctx, dir)
	switch printMode {
	case "env":
		fmt.Fprintf(stdout, "export %s=%s\n", binaries.AssetsEnv, ShellQuote(dir))
	case "path":
		fmt.Fprintln(stdout, dir)
	case "ready":
		names := make([]string, len(opts.Components))
		for i, c := range opts.Components {
			names[i] = c.Name
		}
		fmt.Fprintf(os.Stderr, "%s ready in %s\n", strings.Join(names, ", "), dir)
	default:
		fmt.Fprintf(stdout, "Version: %s\nOS/Arch: %s/%s\nPath: %s\n", version, runtime.GOOS, runtime.GOARCH, dir)
	}
	return nil
}

// newBinsListCommand is `kubeharness bins list`, setup-envtest's `list`.
func newBinsListCommand(opts Options) *cobra.Command {
	o := &storeOptions{}
	cmd := &cobra.Command{
		Use:   "list [VERSION]",
		Short: "list the versions the store holds and those that can be built (setup-envtest list)",
		Long: `Lists the Kubernetes versions the store holds, "(installed)", with which of
their binaries were downloaded and which built, and, unless -i,
those that can be built from the Go module proxy, "(available)": in a project with
a versions.yaml the versions it pins and the newest patch of each of
their minors, elsewhere the newest patch of each of the three newest minors
the proxy lists (binaries.NewestMinors). VERSION (a patch or a minor)
narrows the list.`,
		Args: storeArgs(o),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return binsList(cmd.Context(), opts, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", binDirHelp)
	cmd.Flags().BoolVarP(&o.installedOnly, "installed-only", "i", false, "list only what the store holds: never ask the proxy")
	return cmd
}

// binsList is `kubeharness bins list`, printing to stdout.
func binsList(ctx context.Context, opts Options, o *storeOptions, stdout io.Writer) error {
	st, err := opts.openStore(o.binDir)
	if err != nil {
		return err
	}
	var res *versions.Resolver
	if !o.installedOnly {
		if res, err = opts.resolver(st.Root); err != nil {
			return err
		}
		res.Out = io.Discard
	}
	listed, err := st.List(ctx, o.version, o.installedOnly, res)
	if err != nil {
		return err
	}
	for _, l := range listed {
		if !l.Installed {
			fmt.Fprintf(stdout, "(available)  v%-8s  %s/%s\n", l.Version, l.OS, l.Arch)
			continue
		}
		origins := l.Origins
		if origins != "" {
			origins = "  " + origins
		}
		fmt.Fprintf(stdout, "(installed)  v%-8s  %s/%s%s\n", l.Version, l.OS, l.Arch, origins)
	}
	return nil
}

// newBinsCleanupCommand is `kubeharness bins cleanup`, setup-envtest's
// `cleanup`.
func newBinsCleanupCommand(opts Options) *cobra.Command {
	o := &storeOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup [VERSION]",
		Short: "remove versions from the store (setup-envtest cleanup)",
		Long: `Removes the versions the store holds that VERSION (a patch or a minor) names,
every version when none is given (and then the build modules kept in
<bin-dir>/k8s/.src too), and prints what it removed.`,
		Args: storeArgs(o),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return binsCleanup(opts, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", binDirHelp)
	return cmd
}

// binsCleanup is `kubeharness bins cleanup`, printing to stdout.
func binsCleanup(opts Options, o *storeOptions, stdout io.Writer) error {
	st, err := opts.openStore(o.binDir)
	if err != nil {
		return err
	}
	removed, err := st.Remove(o.version)
	for _, in := range removed {
		fmt.Fprintf(stdout, "removed v%s %s/%s (%s)\n", in.Version, in.OS, in.Arch, in.Dir)
	}
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintf(os.Stderr, "nothing to remove in %s\n", filepath.Join(st.Dir, "k8s"))
	}
	return nil
}

// ShellQuote quotes s for a POSIX shell: in single quotes, each single
// quote in s written as '\”.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// prepareTemplates makes the etcd templates a tuned start from dir copies
// (controlplane.PrepareTemplates) beside the binaries, so that caching the
// binaries' directory (a CI cache) caches them too and a fresh runner's
// first start is a tuned one. One that cannot be made costs a first start
// its speed, nothing else: a warning on standard error.
func prepareTemplates(ctx context.Context, dir string) {
	start := time.Now()
	dirs, err := controlplane.PrepareTemplates(ctx, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: no etcd template beside the binaries (a first start makes one, at stock speed): %v\n", err)
		return
	}
	if len(dirs) > 0 {
		fmt.Fprintf(os.Stderr, "etcd templates ready in %s (%s)\n", controlplane.TemplatesBeside(dir), time.Since(start).Round(time.Millisecond))
	}
}
