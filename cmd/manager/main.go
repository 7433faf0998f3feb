// Command manager runs the kubeharness operator and its admission webhooks
// in one controller-runtime Manager.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/harness/coverage/flush"
	"github.com/kubeharness/kubeharness/internal/manager"
)

func main() {
	os.Exit(run())
}

// run returns the exit status: 0 after a clean stop, 1 when the manager
// could not run or stopped on an error.
func run() int {
	opts := manager.DefaultOptions()
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags]\n\nRuns the kubeharness controllers and admission webhooks.\nThe kubeconfig comes from --kubeconfig, $KUBECONFIG, the in-cluster config or ~/.kube/config.\n\nFlags:\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	// Built with -cover (make e2e COVER=1), the manager hands its coverage
	// counters to the suite spec by spec; otherwise this does nothing.
	stopCoverage, err := flush.Start(flush.Options{})
	if err != nil {
		log.Error(err, "coverage counters")
		return 1
	}
	defer func() {
		if err := stopCoverage(); err != nil {
			log.Error(err, "writing coverage counters")
		}
	}()

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading kubeconfig")
		return 1
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		log.Error(err, "building manager")
		return 1
	}
	log.Info("starting manager", "leaderElection", opts.LeaderElection, "webhookPort", opts.WebhookPort)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return 1
	}
	return 0
}
