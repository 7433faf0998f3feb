package cli

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/report"
	"github.com/kubeharness/kubeharness/harness/shard"
)

// NewShardCommand is `kubeharness shard`.
func NewShardCommand() *cobra.Command {
	var dryRun, timings, which string
	cmd := &cobra.Command{
		Use:   "shard --dry-run REPORT --shard K/N [--timings REPORT]",
		Short: "print the Ginkgo arguments that run shard K of N of a suite, packed by a previous run's times",
		Long: `Splits the specs of any Ginkgo suite across N machines (a CI matrix) and
prints, one per line, the arguments that make ginkgo run shard K's specs
and no others (--focus-file filters on the specs' lines). Every argument
starts with --focus-file= and, whatever the spec files are called, holds
no blank, newline, quote, ':' or ',' of a file name and no '*', '?' or '['
(they are written as regexp escapes such as \x20), so none is ever another
flag or a package. Read them one a line (bash: mapfile -t) rather than
leaving them to a shell's word splitting.

The specs come from a dry run's JSON report of the same code:

  ginkgo --dry-run --json-report=dry-run.json --output-dir=. ./...

The times come from a previous run's JSON report (--timings); specs are
packed longest first onto the shard with the least time so far, Serial and
Ordered containers kept whole, specs the timings do not know counted at
the median. Without --timings the split is by count. Every machine that
runs this with the same inputs gets the same shards, so the matrix needs no
coordinator, and every spec of the dry run runs on exactly one machine.

A summary (the shard's specs and estimate, the slowest and mean shard)
goes to standard error.`,
		Example: `  ginkgo --dry-run --json-report=dry-run.json --output-dir=. ./test/...
  shard=$(kubeharness shard --dry-run dry-run.json --timings last/report.json --shard 2/3)
  mapfile -t shard <<<"$shard"
  ginkgo "${shard[@]}" ./test/...`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dryRun == "" || which == "" {
				return UsageErrorf("--dry-run and --shard are required: %s --dry-run dry-run.json --shard 1/3", CommandName(cmd))
			}
			k, n, err := shard.Parse(which)
			if err != nil {
				return UsageErrorf("--shard: %w", err)
			}
			// Read so that a signal ends the command even while a read
			// does not return.
			var dry, last []types.Report
			err = UntilInterrupted(cmd.Context(), func() (err error) {
				if dry, err = report.ReadReports(dryRun); err != nil || timings == "" {
					return err
				}
				last, err = report.ReadReports(timings)
				return err
			})
			if err != nil {
				return err
			}
			var times map[string]time.Duration
			if timings != "" {
				times = shard.Timings(last)
			}
			specs := shard.Specs(dry)
			if len(specs) == 0 {
				return fmt.Errorf("%s lists no spec that runs: make it with ginkgo --dry-run --json-report on the suite", dryRun)
			}
			shards, err := shard.Pack(specs, times, n)
			if err != nil {
				return err
			}
			var slowest, total time.Duration
			for _, s := range shards {
				slowest = max(slowest, s.Estimate)
				total += s.Estimate
			}
			mine := shards[k-1]
			fmt.Fprintf(cmd.ErrOrStderr(), "shard %d/%d: %d of %d specs, estimate %s (slowest shard %s, mean %s)\n",
				k, n, len(mine.Specs), len(specs), mine.Estimate.Round(time.Millisecond), slowest.Round(time.Millisecond), (total / time.Duration(n)).Round(time.Millisecond))
			for _, a := range mine.GinkgoArgs() {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dryRun, "dry-run", "", "the JSON report of ginkgo --dry-run on the suite: the specs to split")
	f.StringVar(&timings, "timings", "", "the JSON report of a previous run: each spec's time (default: none, an even split by count)")
	f.StringVar(&which, "shard", "", "which shard to print, K/N (from 1/N to N/N)")
	return cmd
}
