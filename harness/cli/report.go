package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/report"
)

// NewReportCommand is `kubeharness report`.
func NewReportCommand() *cobra.Command {
	var opts report.RenderOptions
	var markdown bool
	cmd := &cobra.Command{
		Use:   "report [DIR]",
		Short: "turn a Ginkgo run's directory into report/index.html (--markdown: a job summary)",
		Long: `Reads the directory a Ginkgo run wrote its artifacts to (DIR, default
./artifacts): Ginkgo's JSON report (report.json, from ginkgo
--json-report=report.json --output-dir=DIR), the attempts of a repeated run
(attempts/) and the failure bundles (failures/<spec>/). Writes DIR/report/:

  index.html    one self-contained page: the verdict and counts, where the
                run ran and where its time went, each failure with its
                message, source lines, By steps, bundle and the command that
                runs it again, a timeline of every Ginkgo process, the
                slowest specs, and what changed since the previous run
  summary.json  this run's summary; the one found there becomes
                previous.json, which the page compares with

Prints the page's path. With --markdown it writes nothing and prints the
summary as Markdown instead, for $GITHUB_STEP_SUMMARY.

What report.json names is not trusted, and whoever wrote it may read the
page: a failure's source lines are read only from a regular file of at
most 4 MiB below the source root (--source-root; by default the Go module
the working directory is in, the directory of the nearest go.mod above
it), and only of a Go file (.go) that others may read, that no
dot-directory holds and, in a git repository, that git tracks; a bundle
only from a directory below DIR, each once its symlinks are resolved.
Anything else is shown as a location alone, with a note saying why.
Outside any Go module and without --source-root the page shows no source
lines. report.json must be a regular file of at most 256 MiB.

The page is written only into a directory that no one but you and root
can change: OUT (DIR/report by default) and every directory above it must
belong to you or root and be writable by no one else (sticky directories
such as /tmp excepted), and OUT may not be a symbolic link. A run
directory of another user's is therefore refused: pass --out a directory
of your own.

Exit status: 0 when the report was written, whatever the run's verdict;
1 when it could not be (no report.json, say); 2 on a usage error.`,
		Example: `  kubeharness report                      # ./artifacts
  kubeharness report artifacts/kind --rerun 'make test-e2e FOCUS={{.Focus}}'   # your own rerun command
  kubeharness report ~/Downloads/artifacts --source-root ~/src/my-operator   # a CI run's artifacts
  kubeharness report --markdown artifacts >> "$GITHUB_STEP_SUMMARY"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return UsageErrorf("unexpected arguments %q: %s takes one directory", args[1:], CommandName(cmd))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "artifacts"
			if len(args) == 1 {
				dir = args[0]
			}
			if _, err := template.New("rerun").Parse(opts.Rerun); err != nil {
				return UsageErrorf("--rerun %q: %w", opts.Rerun, err)
			}
			return UntilInterrupted(cmd.Context(), func() error {
				return runReport(cmd.OutOrStdout(), dir, opts, markdown)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&markdown, "markdown", false, "print the summary as Markdown (GitHub's job summary) and write nothing")
	f.StringVar(&opts.JSONReport, "json-report", report.JSONReportFile, "Ginkgo's JSON report, relative to DIR unless absolute")
	f.StringVar(&opts.OutDir, "out", "", "directory to write index.html and summary.json to (default DIR/report)")
	f.StringVar(&opts.Previous, "previous", "", "summary.json of the run to compare with (default OUT/previous.json)")
	f.StringVar(&opts.Rerun, "rerun", report.DefaultRerun, "command that runs one failed spec again: a Go template with {{.Focus}} (a quoted --focus expression), {{.Name}} and {{.Package}}")
	f.StringVar(&opts.SourceRoot, "source-root", "", "the only directory failures' source lines are read from: the suite's checkout, where a recorded path or its longest tail is looked for (default: the Go module the working directory is in)")
	f.StringVar(&opts.KubernetesVersion, "kubernetes-version", "", "Kubernetes version to show, over what the suite reported")
	f.StringVar(&opts.Provider, "provider", "", "provider to show, over what the suite reported")
	f.StringVar(&opts.Commit, "commit", "", "commit to show, over what the suite reported")
	f.StringVar(&opts.Machine, "machine", "", "machine to show, over what the suite reported")
	f.StringSliceVar(&opts.History, "history", nil, "earlier runs' report (or run) directories: a spec that failed in one and passed in another on this run's commit is marked flaky, and each spec shows its failure rate over them")
	cmd.AddCommand(newReportMergeCommand())
	return cmd
}

// newReportMergeCommand is `kubeharness report merge`.
func newReportMergeCommand() *cobra.Command {
	var opts report.RenderOptions
	var markdown bool
	cmd := &cobra.Command{
		Use:   "merge --out DIR RUNDIR...",
		Short: "one page from the shards of a run, each RUNDIR one machine's artifacts",
		Long: `Reads the run directories of the shards of one suite run on several
machines (ginkgo with kubeharness shard's arguments;
each RUNDIR holds that machine's report.json and failures/) and writes one
page to --out: every spec once, where it ran, failures first, each with the
bundle from its own machine's directory, a timeline row per process of
every shard, and each shard's own wall time (the slowest is what the run
took), and, where shards recorded coverage (coverage/coverage.txt,
spec-coverage/), one coverage section: their profiles added up and their
per-spec records together. With --markdown it writes the page and prints
the job summary.
--out must be a directory only you (or root) can change, as for report.`,
		Example: `  kubeharness report merge --out merged shard-1 shard-2 shard-3
  kubeharness report merge --out merged --markdown artifacts-* >> "$GITHUB_STEP_SUMMARY"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return UsageErrorf("name the run directories to merge: %s --out DIR RUNDIR...", CommandName(cmd))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.OutDir == "" {
				return UsageErrorf("--out: name the directory to write the merged page to")
			}
			if _, err := template.New("rerun").Parse(opts.Rerun); err != nil {
				return UsageErrorf("--rerun %q: %w", opts.Rerun, err)
			}
			for _, dir := range args {
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					return fmt.Errorf("%s is not a directory: name each shard's --output-dir", dir)
				}
			}
			var w *report.Written
			err := UntilInterrupted(cmd.Context(), func() (err error) {
				w, err = report.Merge(args, opts)
				return err
			})
			if err != nil {
				return reportError(err)
			}
			r := w.Run
			fmt.Fprintf(cmd.ErrOrStderr(), "run report: %s: %d passed, %d failed, %d flaky, %d skipped, from %d shards\n",
				r.Verdict, r.Counts.Passed, r.Counts.Failed, r.Counts.Flaky, r.Counts.Skipped, len(args))
			if markdown {
				return r.Markdown(cmd.OutOrStdout())
			}
			index, err := filepath.Abs(w.Index)
			if err != nil {
				index = w.Index
			}
			fmt.Fprintln(cmd.OutOrStdout(), index)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.OutDir, "out", "", "directory to write index.html and summary.json to (required)")
	f.BoolVar(&markdown, "markdown", false, "print the job summary as Markdown instead of the page's path")
	f.StringVar(&opts.JSONReport, "json-report", report.JSONReportFile, "each run's Ginkgo JSON report, relative to its RUNDIR")
	f.StringVar(&opts.Rerun, "rerun", report.DefaultRerun, "command that runs one failed spec again: a Go template with {{.Focus}}, {{.Name}} and {{.Package}}")
	f.StringVar(&opts.SourceRoot, "source-root", "", "the only directory failures' source lines are read from (default: the Go module the working directory is in)")
	f.StringSliceVar(&opts.History, "history", nil, "earlier runs' report (or run) directories: flakiness across runs of the same commit, and each spec's failure rate")
	return cmd
}

// runReport writes dir's report and prints its path, or prints its
// Markdown summary; the verdict goes to standard error as a note.
func runReport(stdout io.Writer, dir string, opts report.RenderOptions, markdown bool) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is not a directory: name the --output-dir of a Ginkgo run", dir)
		}
		return err
	}
	if markdown {
		run, err := report.Load(dir, opts)
		if err != nil {
			return reportError(err)
		}
		return run.Markdown(stdout)
	}
	w, err := report.Write(dir, opts)
	if err != nil {
		return reportError(err)
	}
	r := w.Run
	for _, warning := range r.Warnings {
		fmt.Fprintf(os.Stderr, "run report: %s\n", warning)
	}
	fmt.Fprintf(os.Stderr, "run report: %s: %d passed, %d failed, %d flaky, %d skipped\n",
		r.Verdict, r.Counts.Passed, r.Counts.Failed, r.Counts.Flaky, r.Counts.Skipped)
	index, err := filepath.Abs(w.Index)
	if err != nil {
		index = w.Index
	}
	fmt.Fprintln(stdout, index)
	return nil
}

// reportError adds what to do on the command line to a missing report.
func reportError(err error) error {
	if errors.Is(err, report.ErrNoReport) {
		return fmt.Errorf("%w, or name the report the run wrote with --json-report", err)
	}
	return err
}
