package coverage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/coverage/flush"
	"github.com/kubeharness/kubeharness/harness/internal/safefile"
)

// The layout of a record directory.
const (
	// SpecsDir holds a directory per spec, named by SpecID.
	SpecsDir = "specs"
	// OutsideDir holds the counters counted outside any spec.
	OutsideDir = "outside"
	// SpecFile is the spec's description in its directory (SpecInfo).
	SpecFile = "spec.json"
)

// EnvCoverDir is the environment variable the Go runtime writes a -cover
// binary's counters into at exit, where flush.Start registers the process
// for RecordSpecs to find.
const EnvCoverDir = flush.EnvCoverDir

// SpecInfo is what a spec's spec.json holds: enough to match the record to
// a dry run's spec (harness/shard's Spec) and to a changed test file.
type SpecInfo struct {
	// Text is the spec's full text (its containers' texts and its own).
	Text string `json:"text"`
	// File and Line are where its leaf node (It, Entry) is: File as
	// Ginkgo reported it, RepoFile relative to the root of the git
	// repository that holds it ("" outside one), with slashes.
	File     string `json:"file"`
	RepoFile string `json:"repoFile,omitempty"`
	Line     int    `json:"line"`
	// Labels are the spec's Ginkgo labels.
	Labels []string `json:"labels,omitempty"`
	// Commit is the commit checked out where the record was made.
	Commit string `json:"commit,omitempty"`
	// State is how the spec ended ("passed", "failed", ...).
	State string `json:"state"`
	// Processes says whether the counters of the processes registered
	// in GOCOVERDIR are the spec's own (one spec at a time ran against
	// them), besides the test process's.
	Processes bool `json:"processes"`
	// Incomplete says why some counters could not be recorded; Affected
	// treats such a spec as one without a record.
	Incomplete string `json:"incomplete,omitempty"`
}

// SpecID names a spec's directory in a record: a digest of its location
// (relative to its repository when it is in one) and full text, the same
// on every machine.
func SpecID(repoFile string, line int, text string) string {
	sum := sha256.Sum256([]byte(repoFile + ":" + strconv.Itoa(line) + "\n" + text))
	return hex.EncodeToString(sum[:8])
}

// Recording says where RecordSpecs keeps a suite's record and which other
// processes it asks for their counters.
type Recording struct {
	// Dir is the record's directory. It is called when a spec starts, so
	// it may return what a BeforeSuite set; "" records nothing (a run
	// without coverage).
	Dir func() string
	// Processes is the directory where the other processes that run the
	// code under test register (flush.Start): by default $GOCOVERDIR.
	// "" (and no GOCOVERDIR) asks no other process.
	Processes func() string
	// PerProcess says the registered processes serve this Ginkgo process
	// alone (a manager per parallel process, each with a GOCOVERDIR of
	// its own), so their counters are the spec's even in a parallel run.
	// Without it they are asked per spec only in a serial run; in a
	// parallel one their counters count as outside every spec.
	PerProcess bool
}

// RecordSpecs registers, at the top level of a suite (var _ =
// coverage.RecordSpecs(...)), a BeforeEach and a ReportAfterEach that
// record which blocks each spec made the processes registered in
// Recording.Processes run (flush.Start), into <Dir>/specs/<SpecID>/ (see
// the package documentation).
//
// The test process's own counters are not per spec: a go test binary
// computes its coverage meta-data only when it exits, and until then
// runtime/coverage writes and clears none of its counters. Run it with
// -test.gocoverdir=<Dir>/outside (ginkgo ... -- -test.gocoverdir=...) so
// that Affected counts what it reached as reached outside every spec.
//
// In a parallel run (ginkgo -p or --procs) processes that serve every
// Ginkgo process are not asked per spec, as what they count cannot be told
// apart by spec, unless Recording.PerProcess says they serve one each; the
// specs then get no record, which Affected takes as needing a run. A run
// without a directory for processes to register in records nothing. Each
// says so once on standard error. Problems recording a spec do not fail it:
// they are said on standard error and in its spec.json
// (SpecInfo.Incomplete).
func RecordSpecs(r Recording) bool {
	rec := &recorder{Recording: r}
	ginkgo.BeforeEach(func() { rec.begin() })
	return ginkgo.ReportAfterEach(func(report ginkgo.SpecReport) { rec.end(report) })
}

// recorder is RecordSpecs's state in one Ginkgo process.
type recorder struct {
	Recording
	once       sync.Once
	repoRoot   string
	commit     string
	dir        string // the record's directory of the running spec
	procs      string // where the processes of the running spec register
	lastSpec   string // the directory of the spec that ran last
	warnedOnce sync.Map
}

func (rec *recorder) setup() {
	rec.once.Do(func() {
		if wd, err := os.Getwd(); err == nil {
			rec.repoRoot = repoRoot(wd)
		}
		if rec.repoRoot != "" {
			if out, err := exec.Command("git", "-C", rec.repoRoot, "rev-parse", "HEAD").Output(); err == nil {
				rec.commit = strings.TrimSpace(string(out))
			}
		}
	})
}

// processes is the directory registered processes are found in, or "" when
// they are not asked per spec, and why.
func (rec *recorder) processes() (string, string) {
	if !rec.PerProcess {
		if suiteCfg, _ := ginkgo.GinkgoConfiguration(); suiteCfg.ParallelTotal > 1 {
			return "", fmt.Sprintf("a parallel run (%d processes) against processes every Ginkgo process shares: run one process (--procs=1), or give each its own (Recording.PerProcess)",
				suiteCfg.ParallelTotal)
		}
	}
	dir := os.Getenv(EnvCoverDir)
	if rec.Processes != nil {
		dir = rec.Processes()
	}
	if dir == "" {
		return "", "no directory for the processes under test to register in (" + EnvCoverDir + " or Recording.Processes)"
	}
	return dir, ""
}

// begin has the processes write what they counted before the spec (suite
// setup, or the last spec's cleanup) and clear it.
func (rec *recorder) begin() {
	rec.dir, rec.procs = "", ""
	if rec.Dir == nil {
		return
	}
	dir := rec.Dir()
	if dir == "" {
		return
	}
	procs, why := rec.processes()
	if procs == "" {
		rec.warn("no per-spec records", errors.New(why))
		return
	}
	rec.setup()
	rec.dir, rec.procs = dir, procs
	// What the processes did since the last spec ended came of its
	// cleanup; what they did before the first, of suite setup.
	into := rec.lastSpec
	if into == "" {
		into = filepath.Join(dir, OutsideDir)
		if err := os.MkdirAll(into, 0o755); err != nil {
			rec.warn("before the spec", err)
			return
		}
	}
	if _, err := requestFlush(procs, into); err != nil {
		rec.warn("before the spec", err)
	}
}

// end has the processes write the spec's counters into its directory, and
// writes its spec.json there.
func (rec *recorder) end(report types.SpecReport) {
	if rec.dir == "" || report.LeafNodeType != types.NodeTypeIt {
		return
	}
	dir, procs := rec.dir, rec.procs
	rec.dir, rec.procs = "", ""
	info := SpecInfo{
		Text:      report.FullText(),
		File:      report.LeafNodeLocation.FileName,
		Line:      report.LeafNodeLocation.LineNumber,
		Labels:    report.Labels(),
		Commit:    rec.commit,
		State:     report.State.String(),
		Processes: true,
	}
	if rec.repoRoot != "" {
		if rel, err := filepath.Rel(rec.repoRoot, info.File); err == nil && !strings.HasPrefix(rel, "..") {
			info.RepoFile = filepath.ToSlash(rel)
		}
	}
	specDir := filepath.Join(dir, SpecsDir, SpecID(info.RepoFile, info.Line, info.Text))
	if err := os.MkdirAll(specDir, 0o755); err != nil {
		rec.warn(info.Text, err)
		return
	}
	n, err := requestFlush(procs, specDir)
	if err == nil && n == 0 {
		err = fmt.Errorf("no process registered in %s answered (flush.Start in its main, GOCOVERDIR=%s in its environment, built with -cover -covermode=atomic and its main package in -coverpkg)", procs, procs)
	}
	if err != nil {
		info.Incomplete = err.Error()
		rec.warn(info.Text, err)
	}
	rec.lastSpec = specDir
	data, err := json.MarshalIndent(info, "", "  ")
	if err == nil {
		err = safefile.Write(filepath.Join(specDir, SpecFile), append(data, '\n'), 0o644)
	}
	if err != nil {
		rec.warn(info.Text, err)
	}
}

// requestFlush asks the processes registered in procs to flush into dir,
// waiting up to flush.Timeout.
func requestFlush(procs, dir string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), flush.Timeout)
	defer cancel()
	return flush.Request(ctx, procs, dir)
}

func (rec *recorder) warn(what string, err error) {
	// Once per problem: one that every spec has is said for the first.
	if _, seen := rec.warnedOnce.LoadOrStore(err.Error(), true); !seen {
		fmt.Fprintf(os.Stderr, "coverage: %s: %v\n", what, err)
	}
}

// repoRoot is the directory at or above dir that holds .git, or "".
func repoRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
