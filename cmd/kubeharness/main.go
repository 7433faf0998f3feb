// Command kubeharness is this repository's harness command: the library's
// commands (harness/cli: bins use|list|cleanup, shard, report, version),
// and those of this repository (bins VERSION with the node components,
// env, kind, deploy, lockfile, rbac-audit, bench).
package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/repo"
)

const rootLong = `kubeharness: the kubeharness integration-test harness. It provides the
control-plane binaries (downloaded from the official envtest archive, else built
from source through the Go module proxy), runs envtest dev environments and kind
clusters, deploys kubeharness and measures the harness. Its commands bins use,
list and cleanup, shard, report and version are the harness library's, which
any project installs with go install ` + cli.Install + `@VERSION.

` + cli.ExitStatusHelp

func main() { cli.Main(newRootCommand) }

// options are the library commands' options here: this repository's
// build modules for the binaries, and moduleProxy.
func options() cli.Options {
	return cli.Options{
		OpenStore: func(binDir string) (binaries.Store, error) {
			st, err := binaries.OpenStore(binDir)
			if err != nil {
				return binaries.Store{}, err
			}
			st.BuildModules = repo.BuildModules(st.Root)
			return st, nil
		},
		Proxy: moduleProxy,
	}
}

// run runs the kubeharness command line args (without the program name)
// and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Execute(ctx, newRootCommand(), args, stdout, stderr)
}

// newRootCommand is `kubeharness` with all its commands.
func newRootCommand() *cobra.Command {
	root := cli.NewRoot("kubeharness", "the kubeharness integration-test harness", rootLong)
	root.AddCommand(
		newBinsCommand(),
		cli.NewShardCommand(),
		cli.NewAffectedCommand(),
		cli.NewReportCommand(),
		cli.NewVersionCommand(),
		newBenchCommand(),
		newKindCommand(),
		newDeployCommand(),
		newUndeployCommand(),
		newLockfileCommand(),
		newEnvCommand(),
		newRBACAuditCommand(),
	)
	cli.Finish(root)
	return root
}

// moduleProxy, when set, answers the resolver instead of the Go module
// proxy (tests).
var moduleProxy versions.Proxy

// newResolver resolves versions with versions.yaml below root, writing its
// notes to standard error.
func newResolver(root string) (*versions.Resolver, error) { return cli.NewResolver(options(), root) }
