package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/bundle"
)

// RenderOptions say where a run's files are and what the report says
// beyond what the run recorded.
type RenderOptions struct {
	// JSONReport is Ginkgo's JSON report: a path, relative to the run
	// directory unless absolute. Empty means JSONReportFile.
	JSONReport string
	// OutDir is where the page and the summary go; empty means
	// <run directory>/report. Write and Merge refuse one that is a
	// symbolic link, or that someone other than the caller and root owns
	// or may write, or is below such a directory (Write).
	OutDir string
	// Previous is the summary of the run to compare with; empty means
	// OutDir/previous.json (where Write keeps the last run's), when it
	// exists.
	Previous string
	// SourceRoot is the one directory the failures' source lines are read
	// from: a failure's file where the run recorded it when that is below
	// SourceRoot, else at the longest tail of the recorded path below it
	// (a run on another machine). A report.json may name any file, and
	// whoever wrote it may read the page, so lines are shown only of a
	// file below SourceRoot once cleaned and its symlinks resolved, that
	// is a regular Go source file (.go) of at most 4 MiB, that others may
	// read (world-readable), that no dot-directory below SourceRoot holds
	// and, in a git repository, that git tracks (sources.go); any other is
	// shown as its location alone, and the page says why. Empty means the
	// Go module the working directory is in (the directory of the nearest
	// go.mod above it, as the go command finds it); outside any module, no
	// source lines are shown.
	SourceRoot string
	// Rerun is a text/template of the command that runs one failed spec
	// again, with .Focus (a --focus regular expression matching the spec,
	// quoted for a POSIX shell), .Name (the spec's full text) and .Package
	// (the suite's directory relative to SourceRoot, as ./dir; "." when it
	// is not below it). Empty means DefaultRerun.
	Rerun string
	// History are earlier runs' report directories (summary.json in each,
	// or report/summary.json below a run directory): a spec that passed
	// in one and failed in another on this run's commit is flaky, and each
	// spec shows its failure rate over them and this run.
	History []string
	// KubernetesVersion, Provider, Commit and Machine, when set, win over
	// what the suite reported (KubernetesVersionEntry, ...).
	KubernetesVersion, Provider, Commit, Machine string
	// CoverageProfile is the run's merged text coverage profile and
	// CoverageRecord its per-spec coverage record (harness/coverage);
	// relative to the run directory unless absolute. Empty means
	// CoverageProfileFile and SpecCoverageDir; the page has a coverage
	// section when either is there (coverage.go). Reading the record
	// runs go tool covdata.
	CoverageProfile, CoverageRecord string
}

// ErrNoReport is the error of Load and Write when the run directory holds
// no JSON report.
var ErrNoReport = errors.New("no Ginkgo JSON report")

// DefaultRerun runs one spec again with the ginkgo CLI.
const DefaultRerun = "go tool ginkgo --focus={{.Focus}} {{.Package}}"

// Limits on what the page shows of a bundle inline.
const (
	excerptLines   = 30
	excerptLineLen = 400
	bundleMaxFiles = 100
	sourceContext  = 5
)

// Load reads the run in dir (the --output-dir of a Ginkgo run): its JSON
// report, the attempts WriteAttempt recorded, the failures' bundles and
// source lines, and, when there is one, the previous run's summary.
func Load(dir string, opts RenderOptions) (*Run, error) {
	return load(dir, withDefaults(dir, opts))
}

// load is Load with opts' defaults set.
func load(dir string, opts RenderOptions) (*Run, error) {
	part, err := readPart(dir, opts.JSONReport)
	if err != nil {
		return nil, err
	}
	run, err := finish([]*runPart{part}, opts)
	if err != nil {
		return nil, err
	}
	var sources *tree
	if opts.SourceRoot != "" {
		sources, _ = openTree(opts.SourceRoot) // finish said why not
	}
	run.Coverage = loadCoverage(dir, run, opts, sources)
	return run, nil
}

// runPart is one run directory's suites, each in its attempts, oldest
// first.
type runPart struct {
	dir      string
	suites   [][]types.Report
	warnings []string
}

// readPart reads the JSON report at jsonReport and the attempts
// WriteAttempt recorded in dir.
func readPart(dir, jsonReport string) (*runPart, error) {
	reports, err := ReadReports(jsonReport)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: run the suite with ginkgo --json-report=%s --output-dir=%s",
			ErrNoReport, jsonReport, filepath.Base(jsonReport), dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run's report: %w", err)
	}
	part := &runPart{dir: dir}
	// What the report can do without (earlier attempts, the previous
	// run) it does without, and says so: a page is never lost to them.
	recorded, err := readAttempts(filepath.Join(dir, AttemptsDir))
	if err != nil {
		part.warnings = append(part.warnings, fmt.Sprintf("the earlier attempts are left out: %v", err))
	}
	for _, r := range reports {
		part.suites = append(part.suites, attemptsOf(r, recorded))
	}
	return part, nil
}

// finish builds the run of parts and reads what its failures name: each
// spec's bundle below its own part's directory, source lines below the
// source root.
func finish(parts []*runPart, opts RenderOptions) (*Run, error) {
	var suites [][]types.Report
	// Build lists every suite's specs in order: the i-th spec is of part
	// partOf[i].
	var partOf []int
	var warnings []string
	for i, p := range parts {
		suites = append(suites, p.suites...)
		for _, attempts := range p.suites {
			if len(attempts) > 0 {
				for range attempts[len(attempts)-1].SpecReports {
					partOf = append(partOf, i)
				}
			}
		}
		warnings = append(warnings, p.warnings...)
	}
	run := Build(suites, opts)
	history, historyWarnings := readHistory(opts.History)
	warnings = append(warnings, historyWarnings...)
	applyHistory(run, history)
	for i, s := range run.Specs {
		if i < len(partOf) {
			s.part = partOf[i]
		}
	}
	run.Source = opts.JSONReport
	run.Warnings = warnings
	rerun, err := template.New("rerun").Parse(opts.Rerun)
	if err != nil {
		return nil, fmt.Errorf("the rerun command %q is not a valid text/template: %w", opts.Rerun, err)
	}
	// What a run's report names is read below its run directory
	// (bundles) and the source root (source lines) only.
	runDirs := map[string]*tree{}
	for _, p := range parts {
		t, err := openTree(p.dir)
		if err != nil {
			return nil, fmt.Errorf("reading the run directory: %w", err)
		}
		runDirs[p.dir] = t
	}
	var sources *tree
	if opts.SourceRoot != "" {
		if sources, err = openTree(opts.SourceRoot); err != nil {
			run.Warnings = append(run.Warnings, fmt.Sprintf("the failures' source lines are left out: the source root: %v", err))
		}
	}
	for _, s := range append(append([]*Spec{}, run.Failures...), run.Flakes...) {
		if s.Bundle == nil && !s.IsSuiteNode() {
			dir := parts[s.part].dir
			s.Bundle, s.BundleNote = findBundle(runDirs[dir], dir, opts.OutDir, s)
		}
		if s.Failure != nil && s.Source == nil {
			s.Source, s.SourceNote = readSource(sources, s.Failure.Location)
		}
		if s.Rerun == "" && !s.IsSuiteNode() {
			s.Rerun, err = rerunCommand(rerun, sources, s)
			if err != nil {
				return nil, fmt.Errorf("the rerun command %q: %w", opts.Rerun, err)
			}
		}
	}
	if prev, err := ReadSummary(opts.Previous); err == nil {
		run.Comparison = run.Compare(prev)
	} else if !errors.Is(err, fs.ErrNotExist) {
		run.Warnings = append(run.Warnings, fmt.Sprintf("no comparison with the previous run: %v", err))
	}
	return run, nil
}

func withDefaults(dir string, opts RenderOptions) RenderOptions {
	if opts.JSONReport == "" {
		opts.JSONReport = JSONReportFile
	}
	if !filepath.IsAbs(opts.JSONReport) {
		opts.JSONReport = filepath.Join(dir, opts.JSONReport)
	}
	if opts.OutDir == "" {
		opts.OutDir = filepath.Join(dir, OutDir)
	}
	if opts.Previous == "" {
		opts.Previous = filepath.Join(opts.OutDir, PreviousFile)
	}
	if opts.SourceRoot == "" {
		if wd, err := os.Getwd(); err == nil {
			opts.SourceRoot = moduleRoot(wd)
		}
	}
	if opts.Rerun == "" {
		opts.Rerun = DefaultRerun
	}
	for _, o := range []struct {
		v   *string
		def string
	}{{&opts.CoverageProfile, CoverageProfileFile}, {&opts.CoverageRecord, SpecCoverageDir}} {
		if *o.v == "" {
			*o.v = o.def
		}
		if !filepath.IsAbs(*o.v) {
			*o.v = filepath.Join(dir, *o.v)
		}
	}
	return opts
}

// Written is what Write wrote.
type Written struct {
	Run *Run
	// Index is the page's path.
	Index string
}

// Write renders the run in dir into OutDir: the page (IndexFile) and the
// run's summary (SummaryFile), which the next run compares itself with.
// The summary already there becomes PreviousFile first, unless it is this
// run's (a report made again), and this run is compared with it.
//
// OutDir, and every directory above it, must belong to the caller or root
// and be writable by no one else (sticky directories such as /tmp
// excepted), and OutDir may not be a symbolic link: otherwise Write
// refuses, before it reads anything, and says why. By default OutDir is
// below dir, so a run directory of another user's is refused: the page
// would show them the caller's source lines.
func Write(dir string, opts RenderOptions) (*Written, error) {
	opts = withDefaults(dir, opts)
	out, err := openOutDir(opts.OutDir, "the report", outDirFix)
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Close() }()
	run, err := load(dir, opts)
	if err != nil {
		return nil, err
	}
	return writeRun(out, run, opts)
}

// outDirFix is how to write a report elsewhere.
const outDirFix = "pass --out (RenderOptions.OutDir) a directory of your own that only you can write"

// writeRun writes run's page and summary into out, opts.OutDir opened,
// keeping the summary there as PreviousFile first unless it is this run's,
// and comparing run with it.
func writeRun(out *os.Root, run *Run, opts RenderOptions) (*Written, error) {
	previousPath := filepath.Join(opts.OutDir, PreviousFile)
	last, err := readSummaryIn(out, SummaryFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		run.Warnings = append(run.Warnings, fmt.Sprintf("the last run's summary is replaced: %v", err))
	}
	if err == nil && !last.Start.Equal(run.Start) {
		if err := out.Rename(SummaryFile, PreviousFile); err != nil {
			return nil, fmt.Errorf("keeping the last run's summary: %w", err)
		}
		if opts.Previous == previousPath {
			run.Comparison = run.Compare(last)
		}
	}
	var page bytes.Buffer
	if err := run.HTML(&page); err != nil {
		return nil, err
	}
	if err := writeFileIn(out, IndexFile, page.Bytes()); err != nil {
		return nil, fmt.Errorf("writing the report: %w", err)
	}
	summary, err := jsonIndent(run.Summary())
	if err != nil {
		return nil, err
	}
	if err := writeFileIn(out, SummaryFile, summary); err != nil {
		return nil, fmt.Errorf("writing the run's summary: %w", err)
	}
	return &Written{Run: run, Index: filepath.Join(opts.OutDir, IndexFile)}, nil
}

// readSummaryIn reads the summary name in r, as ReadSummary does.
func readSummaryIn(r *os.Root, name string) (Summary, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return Summary{}, err
	}
	return readSummary(f)
}

// Bundle is a failed spec's failure bundle (harness/bundle).
type Bundle struct {
	// Dir is the bundle's directory as a link from the page, Path as a
	// path relative to the run directory (when below it).
	Dir, Path string
	Files     []BundleFile
	// Excerpts are the ends of its events and logs.
	Excerpts []Excerpt
	// Stale is true when the bundle is older than the spec: an earlier
	// run's, this run's failed to be written.
	Stale bool
	// More counts files left out of Files.
	More int
	// Skipped counts what is neither a file nor a directory (a symlink, a
	// device), which the page neither lists nor reads.
	Skipped int
}

// BundleFile is a file of a bundle.
type BundleFile struct {
	Name string // relative to the bundle
	Href string // relative to the page
	Size int64
}

// Excerpt is the end of a text file.
type Excerpt struct {
	Name    string
	Href    string
	Text    string
	Lines   int // lines in the file
	Omitted int // lines left out above Text
}

// findBundle looks for s's bundle where bundle.Dir puts it below dir, then
// where the suite's report entry says it is: a directory below the run
// directory (runDir, dir as the caller named it), and nowhere else. The
// note says why a bundle the suite named is not shown.
func findBundle(runDir *tree, dir, outDir string, s *Spec) (*Bundle, string) {
	candidates := []string{bundle.Dir(dir, s.FullText)}
	if s.BundleEntry != "" {
		candidates = append(candidates, s.BundleEntry)
	}
	note := ""
	for _, c := range candidates {
		rel, where := runDir.locate(c)
		if where == outside || where == leadsOut {
			note = fmt.Sprintf(noteBundleOutside, c)
			continue
		}
		if where != inside {
			continue
		}
		real := filepath.Join(runDir.real, rel)
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		// Paths as the caller named the run directory, for the page's
		// links; real for reading, which has no symlinks.
		named := filepath.Join(dir, rel)
		b := &Bundle{Path: filepath.ToSlash(rel), Dir: link(outDir, named) + "/"}
		var newest time.Time
		_ = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if !d.Type().IsRegular() {
				b.Skipped++
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if info.ModTime().After(newest) {
				newest = info.ModTime()
			}
			if len(b.Files) >= bundleMaxFiles {
				b.More++
				return nil
			}
			name, _ := filepath.Rel(real, path)
			b.Files = append(b.Files, BundleFile{Name: filepath.ToSlash(name), Href: link(outDir, filepath.Join(named, name)), Size: info.Size()})
			return nil
		})
		b.Stale = !newest.IsZero() && !s.Start.IsZero() && newest.Before(s.Start.Add(-time.Second))
		for _, f := range b.Files {
			if f.Name == bundle.EventsFile || strings.HasSuffix(f.Name, ".log") {
				if e, ok := excerpt(runDir, filepath.Join(rel, filepath.FromSlash(f.Name))); ok {
					e.Name, e.Href = f.Name, f.Href
					b.Excerpts = append(b.Excerpts, e)
				}
			}
		}
		sort.SliceStable(b.Excerpts, func(i, j int) bool { return b.Excerpts[i].Name == bundle.EventsFile })
		return b, ""
	}
	return nil, note
}

// link is path as a relative URL from the page in outDir.
func link(outDir, path string) string {
	rel, err := filepath.Rel(outDir, path)
	if err != nil {
		rel = path
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// excerpt is the last excerptLines lines of the text file at rel in t,
// empty lines at its end left out. The file is read a piece at a time and
// only its last lines kept, each cut at excerptLineLen bytes, so that a
// log of any size costs no more memory than those; one with a NUL byte is
// no text, and has none.
func excerpt(t *tree, rel string) (Excerpt, bool) {
	f, _, err := t.open(rel)
	if err != nil {
		return Excerpt{}, false
	}
	defer func() { _ = f.Close() }()
	var last []string // a ring of the last excerptLines lines
	n := 0            // lines pushed into last
	empty := 0        // empty lines read since, pushed before the next line
	push := func(l string) {
		if len(last) < excerptLines {
			last = append(last, l)
		} else {
			last[n%excerptLines] = l
		}
		n++
	}
	var line []byte // the line being read, up to excerptLineLen+1 bytes
	end := func() {
		if len(line) == 0 {
			empty++
			return
		}
		for ; empty > 0; empty-- {
			push("")
		}
		l := string(line)
		if len(l) > excerptLineLen {
			l = l[:excerptLineLen] + " …"
		}
		push(l)
		line = line[:0]
	}
	r := bufio.NewReader(f)
	for {
		chunk, err := r.ReadSlice('\n')
		if bytes.IndexByte(chunk, 0) >= 0 {
			return Excerpt{}, false
		}
		chunk = bytes.TrimSuffix(chunk, []byte("\n"))
		if room := excerptLineLen + 1 - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == nil:
			end()
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			end()
			e := Excerpt{Lines: n}
			if n > len(last) {
				e.Omitted = n - len(last)
				last = slices.Concat(last[n%excerptLines:], last[:n%excerptLines])
			}
			e.Text = strings.Join(last, "\n")
			return e, true
		default:
			return Excerpt{}, false
		}
	}
}

// Source is the source lines around a failure.
type Source struct {
	// File is the file's path relative to the source root.
	File  string
	Line  int
	Lines []SourceLine
}

// SourceLine is one line of a Source.
type SourceLine struct {
	N    int
	Text string
	Hit  bool
}

// readSource reads the lines around loc from below root (nil: there is
// none), or says why it does not: only from a file sources.go's rules
// allow.
func readSource(root *tree, loc types.CodeLocation) (*Source, string) {
	if loc.FileName == "" || loc.LineNumber <= 0 {
		return nil, ""
	}
	if root == nil {
		return nil, noteNoSourceRoot
	}
	rel, why := root.find(loc.FileName, false)
	if rel == "" {
		return nil, why
	}
	data, why := root.readShown(rel)
	if why != "" {
		return nil, why
	}
	lines := strings.Split(string(data), "\n")
	if loc.LineNumber > len(lines) {
		return nil, fmt.Sprintf(noteSourceShorter, len(lines))
	}
	src := &Source{File: filepath.ToSlash(rel), Line: loc.LineNumber}
	for n := max(1, loc.LineNumber-sourceContext); n <= min(len(lines), loc.LineNumber+sourceContext); n++ {
		src.Lines = append(src.Lines, SourceLine{N: n, Text: strings.ReplaceAll(cutLine(lines[n-1]), "\t", "    "), Hit: n == loc.LineNumber})
	}
	return src, ""
}

// focusUnsafe are the characters a focus expression leaves out (matching
// them with "."), so that it can be single-quoted for a shell and passed
// through make: quotes, $ and control characters.
var focusUnsafe = regexp.MustCompile(`\\\$|['$[:cntrl:]]`)

// FocusFor is a ginkgo --focus regular expression that matches the spec
// named fullText.
func FocusFor(fullText string) string {
	return focusUnsafe.ReplaceAllString(regexp.QuoteMeta(fullText), ".")
}

func rerunCommand(t *template.Template, root *tree, s *Spec) (string, error) {
	pkg := "."
	if root != nil && s.SuitePath != "" {
		if rel, _ := root.find(s.SuitePath, true); rel != "" && rel != "." {
			pkg = "./" + filepath.ToSlash(rel)
		}
	}
	var b strings.Builder
	err := t.Execute(&b, struct{ Focus, Name, Package string }{
		Focus: "'" + FocusFor(s.FullText) + "'", Name: s.FullText, Package: pkg,
	})
	return b.String(), err
}
