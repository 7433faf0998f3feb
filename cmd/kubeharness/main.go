// Command kubeharness is the kubeharness harness CLI: it builds the
// control-plane binaries, starts and stops envtest dev environments and
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
	"strings"
	"syscall"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = []command{
	{"bins", "build etcd, kube-apiserver (and kube-controller-manager) for a Kubernetes version from the Go module proxy; bins use|list|cleanup: setup-envtest's interface, in any project", runBins},
	{"bench", "measure envtest control-plane start (tuned against stock settings) and the e2e suite", runBench},
	{"kind", "create (up), delete (down), load images into or export logs of the kind cluster", runKind},
	{"deploy", "apply config/default to the current kubeconfig context", runDeploy},
	{"undeploy", "delete what deploy applied", runUndeploy},
	{"lockfile", "print what versions.yaml pins for a Kubernetes version, as shell variables", runLockfile},
	{"env", "start (up), stop (down) or show (status) a background envtest control plane with the manager", runEnv},
}

func usage() {
	fmt.Fprintf(os.Stderr, `kubeharness: the kubeharness integration-test harness.

Usage: kubeharness <command> [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun `kubeharness <command> -h` for a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	// The control-plane and client libraries log through controller-runtime;
	// only their warnings and errors are worth a user's attention here.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.WarnLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands {
		if c.name == os.Args[1] {
			os.Exit(exitCode(os.Stderr, c.name, c.run(ctx, os.Args[2:])))
		}
	}
	fmt.Fprintf(os.Stderr, "kubeharness: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}

// exitCode reports a command's error and returns the exit status: 0, 2
// for a usage error (the command line cannot run), 1 for a failure.
func exitCode(stderr io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "kubeharness %s: %v\n", name, err)
	var usage *usageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// usageError is a command line a command cannot run: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef prints fs's usage and returns a usage error.
func usagef(fs *flag.FlagSet, format string, args ...any) error {
	fs.Usage()
	return &usageError{fmt.Errorf(format, args...)}
}

// parseArgs parses fs's flags wherever they are among args (the flag
// package alone stops at the first argument that is not a flag) and returns
// the other arguments in order; "--" ends the flags. A bad flag is a usage
// error; -h is flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// fs.Parse consumed a "--" itself when it ended the flags.
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// versionRequest is the Kubernetes version a command is asked for: its
// --version flag and its VERSION argument (which must agree), then
// $K8S_VERSION, then versions.yaml's default. A command line that
// overrides a different $K8S_VERSION says so.
func versionRequest(fs *flag.FlagSet, flagValue, arg string) (binaries.Request, error) {
	req, err := binaries.RequestFrom(flagValue, arg)
	if err != nil {
		return req, usagef(fs, "%v", err)
	}
	if env := os.Getenv(binaries.VersionEnv); env != "" && req.Source != binaries.VersionEnv && !sameVersion(env, req.Value) {
		fmt.Fprintf(os.Stderr, "%s overrides %s=%s\n", req, binaries.VersionEnv, env)
	}
	return req, nil
}

func sameVersion(a, b string) bool {
	norm := func(v string) string { return strings.TrimSuffix(binaries.TrimV(v), ".x") }
	return norm(a) == norm(b)
}

// moduleProxy, when set, answers the resolver instead of the Go module
// proxy (tests).
var moduleProxy binaries.Proxy

// newResolver resolves versions with versions.yaml below root, writing its
// notes to standard error.
func newResolver(root string) (*binaries.Resolver, error) {
	r, err := binaries.NewResolver(root, os.Stderr)
	if err != nil {
		return nil, err
	}
	if moduleProxy != nil {
		r.Proxy = moduleProxy
	}
	return r, nil
}

func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("kubeharness "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: kubeharness %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
