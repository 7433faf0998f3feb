// Package cli is the kubeharness command for any project whose suites run
// on envtest: `bins use|list|cleanup` (setup-envtest's interface, over a
// store laid out as its), `shard` (a suite's specs split across CI
// machines), `report` and `report merge` (a Ginkgo run as one page) and
// `version`. Its main package is harness/cmd/kubeharness:
//
//	go install github.com/kubeharness/kubeharness/harness/cmd/kubeharness@VERSION
//	go get -tool github.com/kubeharness/kubeharness/harness/cmd/kubeharness@VERSION
//
// A project's own command mounts the same commands (NewBinsCommand,
// NewShardCommand, NewReportCommand, NewVersionCommand) beside its own,
// on a root from NewRoot, and runs it with Main: each command is defined
// once. Every command's errors are printed once by Execute, with exit
// status 1, or 2 for a command line that cannot run (usage errors,
// UsageErrorf).
package cli
