package report

// Names of the files and directories below a run directory (the Ginkgo
// --output-dir a run's artifacts go to).
const (
	// JSONReportFile is Ginkgo's --json-report in the run directory.
	JSONReportFile = "report.json"
	// AttemptsDir holds each attempt's report of a repeated run
	// (WriteAttempt).
	AttemptsDir = "attempts"
	// OutDir is the directory the report is written to.
	OutDir = "report"
	// IndexFile is the HTML page in OutDir.
	IndexFile = "index.html"
	// SummaryFile is the run's summary in OutDir, which the next run
	// compares itself with.
	SummaryFile = "summary.json"
	// PreviousFile is the summary of the run before, in OutDir.
	PreviousFile = "previous.json"
	// CoverageProfileFile is the run's merged text coverage profile (go
	// tool covdata textfmt of every process's counters).
	CoverageProfileFile = "coverage/coverage.txt"
	// SpecCoverageDir is the run's per-spec coverage record
	// (coverage.RecordSpecs).
	SpecCoverageDir = "spec-coverage"
)

// Names of the report entries (Ginkgo's AddReportEntry) the report shows.
// A suite adds the run's in its BeforeSuite; any node may add a phase.
const (
	KubernetesVersionEntry = "kubernetes-version"
	ProviderEntry          = "provider"
	CommitEntry            = "commit"
	MachineEntry           = "machine"
	// PhaseEntryPrefix starts the name of an entry whose value is a
	// time.Duration one phase of the run took: "phase/control plane start".
	PhaseEntryPrefix = "phase/"
	// WaitedOnEntry is what a spec waited on (a string); the slowest specs
	// show it.
	WaitedOnEntry = "waited-on"
	// BundleEntry is the directory of a failed spec's bundle, where
	// bundle.Dir does not name it (harness/suite adds it).
	BundleEntry = "failure bundle"
)
