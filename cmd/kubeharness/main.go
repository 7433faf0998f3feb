// Command kubeharness is the kubeharness harness CLI: it builds the
// control-plane binaries, starts and stops envtest dev environments and
// measures the harness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = []command{
	{"bins", "build etcd and kube-apiserver for a Kubernetes version from the Go module proxy", runBins},
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
			err := c.run(ctx, os.Args[2:])
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "kubeharness %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "kubeharness: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}

func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("kubeharness "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: kubeharness %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
