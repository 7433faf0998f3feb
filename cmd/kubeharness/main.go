// Command kubeharness is the kubeharness harness CLI: it provides the
// control-plane binaries (downloaded from the official envtest archive,
// else built from source), starts and stops envtest dev environments and
// measures the harness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// Exit statuses of every kubeharness command.
const (
	exitOK      = 0 // done, or help printed
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line cannot run
)

const rootLong = `kubeharness: the kubeharness integration-test harness. It provides the
control-plane binaries (downloaded from the official envtest archive, else built
from source through the Go module proxy), runs envtest dev environments and kind
clusters, deploys kubeharness and measures the harness.

Flags may come before or after arguments; "--" ends the flags.

Exit status:
  0  success, including --help
  1  the command failed
  2  usage error: unknown command or flag, wrong number of arguments, a bad
     flag value or conflicting version arguments

Progress and notes go to standard error, results (paths, shell variables,
versions) to standard output.`

func main() {
	// The control-plane and client libraries log through controller-runtime;
	// only their warnings and errors are worth a user's attention here.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.WarnLevel)))
	os.Exit(runUntilSignal(run, os.Args[1:], os.Stdout, os.Stderr))
}

// interrupted is the cause of a command's context (context.Cause) once
// SIGINT or SIGTERM asked kubeharness to stop.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return "stopped by " + signalName(e.sig) }

// signalName is "SIGINT" or "SIGTERM".
func signalName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "SIGINT"
	}
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return sig.String()
}

// signalStatus is the exit status of kubeharness stopped by sig: 128 plus
// its number, as a shell reports a process the signal ended (130 for
// SIGINT, 143 for SIGTERM).
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitFailure
}

// runUntilSignal runs cmd (run) with args, with a context that SIGINT or
// SIGTERM cancels, its cause an interrupted. A command that watches its
// context stops what it started and returns; one that reads files (report,
// shard) returns at once, its reading left behind (untilInterrupted), so
// that a read that never ends does not keep kubeharness from exiting.
// Once the command returns, the exit status is signalStatus's. A second
// signal ends kubeharness at once: the first stops the notification, and
// the signal's default action is back.
func runUntilSignal(cmd func(ctx context.Context, args []string, stdout, stderr io.Writer) int, args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan int, 1)
	go func() { done <- cmd(ctx, args, stdout, stderr) }()
	select {
	case code := <-done:
		return code
	case sig := <-sigs:
		signal.Stop(sigs)
		fmt.Fprintf(stderr, "kubeharness: %s: stopping (send it again to stop at once)\n", signalName(sig))
		cancel(interrupted{sig})
		<-done
		return signalStatus(sig)
	}
}

// untilInterrupted runs fn, a command's work that does not watch ctx (it
// reads files, which a context cannot interrupt), and returns its error;
// or, once ctx is done, the context's cause at once, leaving fn to end
// with the process: a read that never returns (a named pipe no one
// writes, a hung network file system) does not keep the command from
// returning.
func untilInterrupted(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// run runs the kubeharness command line args (without the program name)
// and returns its exit status. Help and results go to stdout, errors to
// stderr; commands write their progress notes to os.Stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, newRootCommand(), args, stdout, stderr)
}

// execute runs root with args and returns the exit status, having printed
// an error, if any, once.
func execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	path := root.Name()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	return exitCode(stderr, path, err)
}

// newRootCommand is `kubeharness` with all its commands.
func newRootCommand() *cobra.Command {
	root := newRoot()
	root.AddCommand(
		newBinsCommand(),
		newBenchCommand(),
		newKindCommand(),
		newDeployCommand(),
		newUndeployCommand(),
		newLockfileCommand(),
		newEnvCommand(),
		newRBACAuditCommand(),
		newReportCommand(),
		newShardCommand(),
		newVersionCommand(),
	)
	finishTree(root)
	return root
}

// newRoot is the root command without its commands.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubeharness",
		Short: "the kubeharness integration-test harness",
		Long:  rootLong,
		// run prints errors, once; a usage error gets a pointer to --help,
		// not the whole usage.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	groupCommand(root)
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(newHelpCommand())
	// A command that only holds subcommands shows "kubeharness kind
	// [command]" as its usage, not also "kubeharness kind [flags]".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		`{{if and .Runnable (not (index .Annotations "`+groupAnnotation+`"))}}`, 1))
	return root
}

// groupAnnotation marks a command that only holds subcommands.
const groupAnnotation = "kubeharness/group"

// finishTree adds cobra's help and completion commands to root and makes
// every argument error in the tree a usage error; call it once the tree is
// complete.
func finishTree(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			groupCommand(c) // cobra's completion
		}
		if validate := c.Args; validate != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				return asUsage(validate(cmd, args))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// groupCommand makes c, a command that only holds subcommands, refuse to
// run without one or with an unknown one, as a usage error.
func groupCommand(c *cobra.Command) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[groupAnnotation] = "true"
	// A command cobra cannot run only prints its help (exit 0) whatever
	// its arguments; a runnable one has them validated first, and the
	// validation below never lets this run.
	c.RunE = func(*cobra.Command, []string) error { return nil }
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && sub.Name() != "help" && sub.Name() != "completion" {
					names = append(names, sub.Name())
				}
			}
			return usageErrorf("missing command: name one of %s", strings.Join(names, ", "))
		}
		return unknownCommand(cmd, args[0])
	}
}

// unknownCommand is the usage error for a subcommand cmd does not have.
func unknownCommand(cmd *cobra.Command, name string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	hint := ""
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		hint = fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usageErrorf("unknown command %q for %q%s", name, cmd.CommandPath(), hint)
}

// newHelpCommand is `kubeharness help [command]`: cobra's, except that an
// unknown command is a usage error rather than the root's help.
func newHelpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command, as its --help does.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return asUsage(err)
			}
			if len(rest) > 0 {
				return unknownCommand(target, rest[0])
			}
			return target.Help()
		},
	}
}

// exitCode reports a command's error on stderr and returns the exit
// status: 0, 2 for a usage error (the command line cannot run), which gets
// a pointer to the command's help, 1 for a failure. path is the command's
// path, e.g. "kubeharness bins use".
func exitCode(stderr io.Writer, path string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", path, err)
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
		return exitUsage
	}
	return exitFailure
}

// usageError is a command line a command cannot run: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf is a usage error.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// asUsage makes err, if any, a usage error.
func asUsage(err error) error {
	var usage *usageError
	if err == nil || errors.As(err, &usage) {
		return err
	}
	return &usageError{err}
}

// singleDash finds the argument pflag read as a run of one-letter flags.
var singleDash = regexp.MustCompile(`unknown shorthand flag: '.' in -([A-Za-z][A-Za-z0-9-]+)`)

// flagError makes a flag error a usage error, and points a long flag
// written with one dash, as the flag package accepted it, to its two-dash
// form.
func flagError(cmd *cobra.Command, err error) error {
	if m := singleDash.FindStringSubmatch(err.Error()); m != nil && cmd.Flags().Lookup(m[1]) != nil {
		err = fmt.Errorf("%w; did you mean --%s?", err, m[1])
	}
	return asUsage(err)
}

// versionRequest is the Kubernetes version a command is asked for: its
// --version flag and its VERSION argument (which must agree: a usage error
// otherwise), then $K8S_VERSION, then versions.yaml's default. A request
// that is no version is an error that lists the versions versions.yaml
// pins. A command line that overrides a different $K8S_VERSION says so.
func versionRequest(flagValue, arg string) (versions.Selector, error) {
	sel, err := versions.FromCommandLine(flagValue, arg)
	var bad *versions.SelectorError
	switch {
	case errors.As(err, &bad):
		if root, rootErr := repo.Root(); rootErr == nil {
			if lock, lockErr := versions.LoadLockfile(root); lockErr == nil {
				err = lock.Explain(err)
			}
		}
		return sel, err
	case err != nil:
		return sel, asUsage(err)
	}
	if env := os.Getenv(versions.EnvVar); env != "" && sel.Source() != versions.SourceEnv {
		if fromEnv, err := versions.FromEnv(); err != nil || fromEnv.Canonical() != sel.Canonical() {
			fmt.Fprintf(os.Stderr, "%s overrides %s=%s\n", sel, versions.EnvVar, env)
		}
	}
	return sel, nil
}

// noArgs accepts no arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected arguments %q: %s takes none", args, commandName(cmd))
	}
	return nil
}

// optionalVersion accepts at most one argument, the VERSION, for commands
// such as `bins [VERSION]`.
func optionalVersion(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usageErrorf("unexpected arguments %q: %s takes at most one, the VERSION", args[1:], commandName(cmd))
	}
	return nil
}

// firstArg is args' first element, or "".
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// commandName is cmd's path below the root: "bins use".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// moduleProxy, when set, answers the resolver instead of the Go module
// proxy (tests).
var moduleProxy versions.Proxy

// newResolver resolves versions with versions.yaml below root, writing its
// notes to standard error.
func newResolver(root string) (*versions.Resolver, error) {
	r, err := binaries.NewResolver(root, os.Stderr)
	if err != nil {
		return nil, err
	}
	if moduleProxy != nil {
		r.Proxy = moduleProxy
	}
	return r, nil
}
