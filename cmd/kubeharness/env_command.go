package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/devenv"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// envOptions are the flags of `kubeharness env` and its subcommands.
type envOptions struct {
	// version is up's --version; patch is serve's, the patch up resolved.
	version, manager string
	patch            versions.Version
	// vmController is the VirtualMachine controller's binary.
	vmController string
	// vmDriver is --vm-driver: for up, the driver asked for; for serve,
	// the driver up chose (devenv.Options.VMDriver).
	vmDriver string
	timeout  time.Duration
	// stateDir is --state-dir; empty is .kubeharness/envtest in the
	// repository.
	stateDir string
	// components are restart's arguments.
	components []string
}

// newEnvCommand is `kubeharness env`: up, down, status, restart, and
// serve, the hidden supervisor up starts in the background.
func newEnvCommand() *cobra.Command {
	var o envOptions
	cmd := &cobra.Command{
		Use:   "env",
		Short: "start (up), stop (down), show (status) or restart a component of a background envtest control plane with the manager and the VirtualMachine controller",
		Long: `Runs etcd, kube-apiserver, kube-controller-manager (provided by 'kubeharness
bins'), the manager and the VirtualMachine controller in the background, for a
dev loop against a real API server, with a kubectl of the same version.

State, kubeconfig, kubectl (bin/) and logs live in .kubeharness/envtest/
(--state-dir); one environment runs per state directory. A state directory
is one env up made: up creates a missing one (mode 0700) or adopts an empty
one of yours, writing the marker .kubeharness-envtest; every env command
refuses a directory without it, or one that is not yours or that others may
write in, and removes or writes nothing there.`,
	}
	cmd.PersistentFlags().StringVar(&o.stateDir, "state-dir", "", "where the kubeconfig, logs and state live: a directory env up makes, or an empty one of yours (default: .kubeharness/envtest in the repository)")
	run := func(sub string) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, _ []string) error { return runEnv(c.Context(), sub, o) }
	}
	binaryFlags := func(c *cobra.Command) {
		c.Flags().StringVar(&o.manager, "manager", "bin/manager", "manager binary to run (make envtest-up builds it)")
		c.Flags().StringVar(&o.vmController, "vm-controller", "bin/vm-controller", "VirtualMachine controller binary to run (make envtest-up builds it)")
	}

	up := &cobra.Command{
		Use:   "up",
		Short: "start the environment in the background; returns once the webhooks admit requests",
		Long: `Starts etcd, kube-apiserver, kube-controller-manager (provided by 'kubeharness
bins'), the manager and the VirtualMachine controller in the background, in a
supervisor of their own that outlives this command, and returns once the
webhooks admit requests through the API server. When an environment already
runs, says so and leaves it; while another up is starting one in the same
state directory, says so (with its pid) and fails.

The supervisor restarts the manager or the VirtualMachine controller when it
exits, after 1s, then twice as long after each exit (at most 1m; once it
ran for 1m, 1s again); env.log says when and why, env status counts the
restarts. 'kubeharness env restart' restarts one after a rebuild.

The VirtualMachine controller's driver is --vm-driver, else $VM_DRIVER, else
docker when a Docker daemon answers ($DOCKER_HOST, else the local socket)
and fake (in memory) otherwise; up says which and why.`,
		Args: cli.NoArgs,
		RunE: run("up"),
	}
	up.Flags().StringVar(&o.version, "version", "", "Kubernetes version: a patch, or a minor for its newest patch (default: $"+versions.EnvVar+", then versions.yaml)")
	binaryFlags(up)
	up.Flags().StringVar(&o.vmDriver, "vm-driver", "", "VirtualMachine driver, docker or fake (default: $"+operatortest.VMDriverEnv+", then docker when a Docker daemon answers, else fake)")
	up.Flags().DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long up waits for the control plane and the webhooks")

	serve := &cobra.Command{
		Use:    "serve",
		Short:  "the supervisor env up starts in the background",
		Hidden: true,
		Args:   cli.NoArgs,
		RunE:   run("serve"),
	}
	serve.Flags().TextVar(&o.patch, "version", versions.Version{}, "Kubernetes patch version, as up resolved it")
	binaryFlags(serve)
	serve.Flags().StringVar(&o.vmDriver, "vm-driver", "", "VirtualMachine driver, as up chose it")

	down := &cobra.Command{
		Use:   "down",
		Short: "stop everything up started, also after a controller or the supervisor crashed; safe to run when nothing runs",
		Args:  cli.NoArgs,
		RunE:  run("down"),
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "show what runs, and how often the manager and the VirtualMachine controller were restarted",
		Args:  cli.NoArgs,
		RunE:  run("status"),
	}
	restart := &cobra.Command{
		Use:   "restart (manager | vm-controller)...",
		Short: "restart the manager or the VirtualMachine controller, e.g. after rebuilding it (make manager); returns once it runs again",
		Long: `Asks the environment's supervisor to stop the named components and start
them again from their binaries (the paths env up was given, so a rebuilt
bin/manager is what runs). It returns once each runs again; the manager once
its webhooks admit requests. make envtest-restart rebuilds both and restarts
them.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.UsageErrorf("name what to restart: manager, vm-controller or both")
			}
			for _, a := range args {
				if a != "manager" && a != "vm-controller" {
					return cli.UsageErrorf("unknown component %q: restart manager or vm-controller", a)
				}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.components = args
			return runEnv(c.Context(), "restart", o)
		},
	}
	cmd.AddCommand(up, down, status, restart, serve)
	return cmd
}

// runEnv runs the env subcommand sub (up, serve, down, status or restart;
// see newEnvCommand) with its flags, through internal/devenv.
func runEnv(ctx context.Context, sub string, o envOptions) error {
	root, err := repo.Root()
	if err != nil {
		return err
	}
	env := devenv.Options{
		Root: root, StateDir: o.stateDir, Proxy: moduleProxy,
		Manager: o.manager, VMController: o.vmController, VMDriver: o.vmDriver, Timeout: o.timeout,
	}
	switch sub {
	case "up":
		if env.Version, err = cli.VersionRequest(o.version, ""); err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		// The supervisor is this program's hidden env serve, whose flags
		// are those devenv.Up appends.
		env.Supervisor = []string{self, "env", "serve"}
		return devenv.Up(ctx, env)
	case "serve":
		return devenv.Serve(env, o.patch)
	case "down":
		return devenv.Down(env)
	case "status":
		return devenv.Status(env)
	case "restart":
		return devenv.Restart(env, o.components...)
	}
	return fmt.Errorf("unknown env subcommand %q", sub)
}
