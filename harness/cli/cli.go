package cli

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
)

// Exit statuses of every kubeharness command.
const (
	ExitOK      = 0 // done, or help printed
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // the command line cannot run
)

// Install is how to get the kubeharness command: the Go package path that
// `go install` and `go get -tool` take.
const Install = "github.com/kubeharness/kubeharness/harness/cmd/kubeharness"

// ExitStatusHelp is the part of a root command's help that says what
// kubeharness's exit statuses and output streams mean.
const ExitStatusHelp = `Flags may come before or after arguments; "--" ends the flags.

Exit status:
  0  success, including --help
  1  the command failed
  2  usage error: unknown command or flag, wrong number of arguments, a bad
     flag value or conflicting version arguments

Progress and notes go to standard error, results (paths, shell variables,
versions) to standard output.`

const rootLong = `kubeharness: the integration-test harness's command for any project whose
suites run on envtest. It provides the control-plane binaries (setup-envtest's
use, list and cleanup: downloaded from the official envtest archive, else built
from source through the Go module proxy), splits a Ginkgo suite across CI
machines (shard), chooses the specs a change needs by a per-spec coverage
record (affected), and turns a Ginkgo run into one page (report).

Install it at the version of the harness library you use:

  go install ` + Install + `@VERSION
  go get -tool ` + Install + `@VERSION   # then: go tool kubeharness ...

` + ExitStatusHelp

// Options adapt the commands to a project. The zero value serves any
// project: the store of binaries is the one binaries.OpenStore opens, and
// versions are resolved through the Go module proxy.
type Options struct {
	// OpenStore opens the store of bins use, list and cleanup for
	// --bin-dir ("" when it is not given). Default: binaries.OpenStore.
	OpenStore func(binDir string) (binaries.Store, error)
	// Proxy, when set, answers the version questions the Go module proxy
	// otherwise answers (a test's, a mirror's).
	Proxy versions.Proxy
}

// New is the kubeharness command with every command of this package:
// bins (use, list, cleanup), shard, affected, report (merge) and
// version; what
// `go install ` + Install + “ installs.
func New(o Options) *cobra.Command {
	root := NewRoot("kubeharness", "the integration-test harness's command: envtest binaries, shards, run reports", rootLong)
	root.AddCommand(NewBinsCommand(o), NewShardCommand(), NewAffectedCommand(), NewReportCommand(), NewVersionCommand())
	Finish(root)
	return root
}

// Main runs the command newRoot makes on the program's arguments until it
// returns or a signal stops it (RunUntilSignal), and exits with its
// status. The control-plane and client libraries log through
// controller-runtime; only their warnings and errors reach standard error.
func Main(newRoot func() *cobra.Command) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.WarnLevel)))
	os.Exit(RunUntilSignal(func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return Execute(ctx, newRoot(), args, stdout, stderr)
	}, os.Args[1:], os.Stdout, os.Stderr))
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
	return ExitFailure
}

// RunUntilSignal runs cmd (run) with args, with a context that SIGINT or
// SIGTERM cancels, its cause an interrupted. A command that watches its
// context stops what it started and returns; one that reads files (report,
// shard) returns at once, its reading left behind (UntilInterrupted), so
// that a read that never ends does not keep kubeharness from exiting.
// Once the command returns, the exit status is signalStatus's. A second
// signal ends kubeharness at once: the first stops the notification, and
// the signal's default action is back.
func RunUntilSignal(cmd func(ctx context.Context, args []string, stdout, stderr io.Writer) int, args []string, stdout, stderr io.Writer) int {
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

// UntilInterrupted runs fn, a command's work that does not watch ctx (it
// reads files, which a context cannot interrupt), and returns its error;
// or, once ctx is done, the context's cause at once, leaving fn to end
// with the process: a read that never returns (a named pipe no one
// writes, a hung network file system) does not keep the command from
// returning.
func UntilInterrupted(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Execute runs root with args (without the program's name) and returns
// the exit status, having printed an error, if any, once on stderr: 0,
// ExitUsage for a usage error, which gets a pointer to the command's
// --help, ExitFailure for any other.
func Execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
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

// NewRoot is a root command without commands, as New's is: errors are
// printed once, by Execute, flag and argument errors are usage errors, and
// a command that only holds subcommands refuses to run without one. Add
// commands, then call Finish.
func NewRoot(use, short, long string) *cobra.Command {
	root := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
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

// Finish adds cobra's help and completion commands to root and makes
// every argument error in the tree a usage error; call it once the tree is
// complete.
func Finish(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			groupCommand(c) // cobra's completion
		}
		if validate := c.Args; validate != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				return AsUsage(validate(cmd, args))
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
			return UsageErrorf("missing command: name one of %s", strings.Join(names, ", "))
		}
		return UnknownCommand(cmd, args[0])
	}
}

// UnknownCommand is the usage error for a subcommand cmd does not have.
func UnknownCommand(cmd *cobra.Command, name string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	hint := ""
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		hint = fmt.Sprintf("; did you mean %q?", s[0])
	}
	return UsageErrorf("unknown command %q for %q%s", name, cmd.CommandPath(), hint)
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
				return AsUsage(err)
			}
			if len(rest) > 0 {
				return UnknownCommand(target, rest[0])
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
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", path, err)
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
		return ExitUsage
	}
	return ExitFailure
}

// usageError is a command line a command cannot run: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// UsageErrorf is a usage error.
func UsageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// AsUsage makes err, if any, a usage error.
func AsUsage(err error) error {
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
	return AsUsage(err)
}

// VersionRequest is the Kubernetes version a command is asked for: its
// --version flag and its VERSION argument (which must agree: a usage error
// otherwise), then $K8S_VERSION, then versions.yaml's default. A request
// that is no version is an error that lists the versions versions.yaml
// pins. A command line that overrides a different $K8S_VERSION says so.
func VersionRequest(flagValue, arg string) (versions.Selector, error) {
	sel, err := versions.FromCommandLine(flagValue, arg)
	var bad *versions.SelectorError
	switch {
	case errors.As(err, &bad):
		if root, rootErr := binaries.ProjectRoot(); rootErr == nil {
			if lock, lockErr := versions.LoadLockfile(root); lockErr == nil {
				err = lock.Explain(err)
			}
		}
		return sel, err
	case err != nil:
		return sel, AsUsage(err)
	}
	if env := os.Getenv(versions.EnvVar); env != "" && sel.Source() != versions.SourceEnv {
		if fromEnv, err := versions.FromEnv(); err != nil || fromEnv.Canonical() != sel.Canonical() {
			fmt.Fprintf(os.Stderr, "%s overrides %s=%s\n", sel, versions.EnvVar, env)
		}
	}
	return sel, nil
}

// NoArgs accepts no arguments.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("unexpected arguments %q: %s takes none", args, CommandName(cmd))
	}
	return nil
}

// OptionalVersion accepts at most one argument, the VERSION, for commands
// such as `bins [VERSION]`.
func OptionalVersion(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return UsageErrorf("unexpected arguments %q: %s takes at most one, the VERSION", args[1:], CommandName(cmd))
	}
	return nil
}

// FirstArg is args' first element, or "".
func FirstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// CommandName is cmd's path below the root: "bins use".
func CommandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// resolver resolves versions with versions.yaml below root (none when
// root is ""), writing its notes to standard error, asking o.Proxy when
// set.
func (o Options) resolver(root string) (*versions.Resolver, error) {
	r, err := binaries.NewResolver(root, os.Stderr)
	if err != nil {
		return nil, err
	}
	if o.Proxy != nil {
		r.Proxy = o.Proxy
	}
	return r, nil
}

// NewResolver resolves versions as the commands of New(o) do: with the
// versions.yaml below root (none when root is ""), notes on standard
// error, o.Proxy when set.
func NewResolver(o Options, root string) (*versions.Resolver, error) { return o.resolver(root) }
