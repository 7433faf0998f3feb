// Command manager runs the kubeharness operator and its admission webhooks
// in one controller-runtime Manager.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/internal/manager"
)

func main() {
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

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading kubeconfig")
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		log.Error(err, "building manager")
		os.Exit(1)
	}
	log.Info("starting manager", "leaderElection", opts.LeaderElection, "webhookPort", opts.WebhookPort)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
