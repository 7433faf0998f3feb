// Command vm-controller runs the VirtualMachine controller: each
// VirtualMachine becomes a Docker container (or an in-memory
// server with --vm-driver=fake), with client-go leader election on a
// Lease when --leader-elect is set. Run it with --help for its flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/harness/coverage/flush"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

func main() {
	os.Exit(run())
}

// run returns the exit status: 0 after a clean stop, 1 when the controller
// could not run or stopped on an error, 2 for a bad command line.
func run() int {
	opts := vmcontroller.DefaultOptions()
	opts.BindFlags(flag.CommandLine)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: in-cluster configuration, then $KUBECONFIG)")
	klog.InitFlags(flag.CommandLine)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: vm-controller [flags]\n\nRuns the VirtualMachine controller.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "vm-controller: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "vm-controller: %v\n", err)
		return 2
	}
	// Built with -cover (make e2e COVER=1), the controller hands its
	// coverage counters to the suite spec by spec; otherwise this does
	// nothing.
	stopCoverage, err := flush.Start(flush.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "vm-controller: coverage counters: %v\n", err)
		return 1
	}
	defer func() {
		if err := stopCoverage(); err != nil {
			fmt.Fprintf(os.Stderr, "vm-controller: writing coverage counters: %v\n", err)
		}
	}()
	// A harness that runs this binary with the fake driver steers the
	// driver as it steers one in its own process (the envtest provider's
	// controllers as binaries, make e2e COVER=1).
	if file := os.Getenv(vmfixture.FakeVMsFileEnv); file != "" && opts.Driver == driver.FakeDriverName {
		fake := driver.NewFake()
		opts.NewDriver = func() (driver.Driver, error) { return fake, nil }
		stopServing, err := vmfixture.ServeFakeVMsFile(fake, file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "vm-controller: %v\n", err)
			return 1
		}
		defer stopServing()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "vm-controller: no API server to talk to: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := vmcontroller.Run(ctx, cfg, opts); err != nil {
		klog.ErrorS(err, "vm-controller stopped")
		klog.Flush()
		return 1
	}
	klog.Flush()
	return 0
}
