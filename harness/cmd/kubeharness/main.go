// Command kubeharness provides the control-plane binaries of envtest
// (setup-envtest's use, list and cleanup), splits a Ginkgo suite across CI
// machines and turns a Ginkgo run into one page, in any project. Install
// it at the version of the harness library a project uses:
//
//	go install github.com/kubeharness/kubeharness/harness/cmd/kubeharness@VERSION
//	go get -tool github.com/kubeharness/kubeharness/harness/cmd/kubeharness@VERSION
//
// Run `kubeharness --help` for its commands.
package main

import (
	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/cli"
)

func main() {
	cli.Main(func() *cobra.Command { return cli.New(cli.Options{}) })
}
