// Package report turns the directory of a Ginkgo run (its --output-dir)
// into a page a person reads first when a run failed: report/index.html,
// one self-contained HTML file that opens from disk or as a CI artifact.
// It shows the verdict and counts, where the run ran and where its wall
// time went; then each failure with its message, the source lines around
// it, its By steps, its failure bundle (harness/bundle) and the command
// that runs it again; a timeline of every parallel process; the slowest
// specs; and what changed since the previous run. Markdown writes the same
// summary for a CI job summary.
//
// It reads the run's files and nothing else:
//
//	<dir>/report.json            ginkgo --json-report=report.json --output-dir=<dir>
//	<dir>/attempts/*.json        each attempt of ginkgo --repeat (WriteAttempt)
//	<dir>/failures/<spec>/       failure bundles, as bundle.Dir names them
//	<dir>/report/summary.json    the last run's summary, which Write keeps as previous.json
//	<dir>/coverage/coverage.txt  the run's merged coverage profile, when it has one
//	<dir>/spec-coverage/         its per-spec coverage record (harness/coverage), read with go tool covdata
//
// With coverage, the page has a coverage section: the percent of
// statements each package reached, the lines nothing in the run reached
// (generated files left out; their source under the rules below), and
// the files each spec reached.
//
// and the source lines around each failure. What the run's JSON report
// names is data, not a path to trust: a failure's file is read only below
// the source root (RenderOptions.SourceRoot, by default the Go module the
// working directory is in), a bundle the suite named only below <dir>,
// each once cleaned and with its symlinks resolved; anything else is shown
// as a location without its contents, with a note saying why. As whoever
// wrote the report may read the page, source lines are shown only of Go
// files that others may read, outside dot-directories and, in a git
// repository, tracked by git. What the report reads whole (the JSON
// report, summaries) must be a regular file of bounded size
// (MaxReportSize, MaxSummarySize).
//
// The page is written only into a directory that nobody but the caller
// and root can change (nor any directory above it, sticky ones such as
// /tmp excepted) and that is no symbolic link; by default that is
// <dir>/report, so the run directory of another user is refused.
//
// A suite tells the report where it ran with report entries (Ginkgo's
// AddReportEntry, in its BeforeSuite; ReportEntryVisibilityNever keeps
// them out of the console):
//
//	kubernetes-version   the cluster's version, "v1.37.1"
//	provider             where the cluster runs, "envtest"
//	commit               the commit under test
//	machine              the machine, as ThisMachine describes it
//	phase/<name>         a time.Duration one phase of the run took
//	waited-on            in a spec: what it waited on, shown with the slowest specs
//
// RenderOptions set the first four for a suite that does not report them.
//
// A spec is flaky when it both passed and failed in the run: retried by
// FlakeAttempts and passed (it counts as flaky, not passed), or passed in
// an attempt of ginkgo --repeat and failed in another. Ginkgo keeps only
// the last attempt's JSON report; harness/suite.RecordAttempts keeps each.
package report
