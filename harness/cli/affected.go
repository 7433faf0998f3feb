package cli

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/coverage"
	"github.com/kubeharness/kubeharness/harness/report"
	"github.com/kubeharness/kubeharness/harness/shard"
)

// NewAffectedCommand is `kubeharness affected`.
func NewAffectedCommand() *cobra.Command {
	var (
		opts            coverage.Options
		dryRun, timings string
		which           string
		verbose         bool
	)
	cmd := &cobra.Command{
		Use:   "affected --since REF --coverage DIR [--report DRY-RUN] [--packages PATTERNS]",
		Short: "print the Ginkgo arguments that run only the specs the changes since REF need, by a per-spec coverage record",
		Long: `Compares the changes since REF (git diff REF, and untracked files) with a
per-spec coverage record (harness/coverage: RecordSpecs in the suite file,
the binaries under test built with -cover) and prints, one per line, the
arguments that make ginkgo run the specs the changes need and no others,
written as kubeharness shard writes them (read them with mapfile -t).

A spec is selected when a block it reached holds a changed line, when its
_test.go file changed, or when the record does not know it (a new spec, one
whose record is incomplete). Every spec is selected for a change coverage
cannot see: go.mod or go.sum, non-Go files other than docs (manifests,
CRDs, the Makefile), embedded files, testdata, Go code no binary under test
was built with coverage from, and blocks reached outside every spec. A
change nothing reaches (docs, comments) selects none: then the arguments
match no spec file, ginkgo runs nothing, and passes.

The specs to choose from come from a dry run's JSON report of the code as
it is now (--report, as kubeharness shard reads it):

  ginkgo --dry-run --json-report=dry-run.json --output-dir=. ./test/e2e

Without one they are the record's. --packages names the go list patterns of
the suite and the binaries it runs, so that Go files outside them change
nothing. With --shard K/N the affected specs are split across N machines as
kubeharness shard splits a whole suite (--timings: a previous run's report).

What was selected and why goes to standard error.`,
		Example: `  ginkgo --dry-run --json-report=dry-run.json --output-dir=. ./test/e2e
  args=$(kubeharness affected --since origin/main --coverage nightly/spec-coverage --report dry-run.json --packages ./test/e2e,./cmd)
  mapfile -t args <<<"$args"
  ginkgo "${args[@]}" ./test/e2e`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Since == "" || opts.Record == "" {
				return UsageErrorf("--since and --coverage are required: %s --since origin/main --coverage DIR", CommandName(cmd))
			}
			k, n := 1, 1
			if which != "" {
				var err error
				if k, n, err = shard.Parse(which); err != nil {
					return UsageErrorf("--shard: %w", err)
				}
			}
			if timings != "" && which == "" {
				return UsageErrorf("--timings packs the affected specs into shards: give --shard K/N with it")
			}
			var last []types.Report
			err := UntilInterrupted(cmd.Context(), func() (err error) {
				if dryRun != "" {
					if opts.DryRun, err = report.ReadReports(dryRun); err != nil {
						return err
					}
				}
				if timings != "" {
					last, err = report.ReadReports(timings)
				}
				return err
			})
			if err != nil {
				return err
			}
			sel, err := coverage.Affected(cmd.Context(), opts)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			fmt.Fprintln(stderr, sel.Summary())
			for _, note := range sel.Notes {
				fmt.Fprintf(stderr, "  note: %s\n", note)
			}
			if verbose || len(sel.Specs) <= 20 {
				for _, s := range sel.Specs {
					if reasons := sel.Reasons[s.Key]; len(reasons) > 0 && !sel.All {
						fmt.Fprintf(stderr, "  %s:%d: %s\n", s.File, s.Line, reasons[0])
					}
				}
			}
			args := sel.GinkgoArgs()
			if which != "" && len(sel.Specs) > 0 {
				var times map[string]time.Duration
				if timings != "" {
					times = shard.Timings(last)
				}
				shards, err := shard.Pack(sel.Specs, times, n)
				if err != nil {
					return err
				}
				mine := shards[k-1]
				fmt.Fprintf(stderr, "shard %d/%d: %d of the %d affected specs, estimate %s\n", k, n, len(mine.Specs), len(sel.Specs), mine.Estimate.Round(time.Millisecond))
				args = mine.GinkgoArgs()
				if len(mine.Specs) == 0 {
					args = (&coverage.Selection{}).GinkgoArgs()
				}
			}
			for _, a := range args {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Since, "since", "", "the commit the changes are taken from (git diff REF): the one the record was made at, or a later one it still fits")
	f.StringVar(&opts.Record, "coverage", "", "the per-spec coverage record (a directory of specs/<id>/; several shards' records merged by copying them into one)")
	f.StringVar(&dryRun, "report", "", "the JSON report of ginkgo --dry-run on the suite: the specs to choose from (default: the record's)")
	f.StringSliceVar(&opts.Packages, "packages", nil, "go list patterns of the suite and the binaries it runs: Go files outside them change no spec")
	f.StringVar(&opts.Repo, "repo", "", "a directory in the git repository (default: the working directory)")
	f.StringVar(&which, "shard", "", "split the affected specs across N machines and print shard K/N's arguments")
	f.StringVar(&timings, "timings", "", "with --shard: the JSON report of a previous run, each spec's time")
	f.BoolVarP(&verbose, "verbose", "v", false, "say why each selected spec runs, however many")
	return cmd
}
