package report

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/harness/coverage"
)

// A run's code coverage, when the suite recorded it (harness/coverage),
// is read from its directory too:
//
//	<dir>/coverage/coverage.txt   the run's merged text profile (go tool covdata textfmt)
//	<dir>/spec-coverage/          the per-spec record (coverage.RecordSpecs)
//
// The page shows the percent of statements reached per package, the lines
// nothing in the run reached (with their source, under the same rules as a
// failure's: sources.go), and the files each spec reached.

// Limits on what the coverage section shows.
const (
	// maxCoverageProfile bounds the size of the merged profile read.
	maxCoverageProfile = 64 << 20
	// unreachedRangeLines is how many lines of one unreached range are
	// shown; the rest are counted.
	unreachedRangeLines = 8
	// unreachedFileLines is how many unreached lines of one file are
	// shown; the rest are counted.
	unreachedFileLines = 60
	// unreachedLines is how many unreached lines the page shows in all;
	// the files after that are listed without their lines.
	unreachedLines = 1500
	// unreachedFiles is how many files with unreached code are listed.
	unreachedFiles = 200
	// coverageLoadTimeout bounds reading the per-spec record (a go tool
	// covdata run per spec).
	coverageLoadTimeout = 5 * time.Minute
)

// Coverage is a run's code coverage as the page shows it.
type Coverage struct {
	// Profile names where the whole run's blocks came from.
	Profile string
	// Statements and Covered count the statements of every package.
	Statements, Covered int
	Packages            []PackageCoverage
	// Unreached are the files, by package, whose blocks nothing in the
	// run reached, generated files left out (Generated counts them), at
	// most unreachedFiles (UnreachedMore counts the rest).
	Unreached     []UnreachedFile
	UnreachedMore int
	Generated     int
	// Specs are the specs of the per-spec record, in the run's order where
	// the run has them, each with the files it reached.
	Specs []SpecCoverage
	// Notes say what the section leaves out, and why.
	Notes []string
}

// Percent is Covered of Statements, to one decimal.
func (c *Coverage) Percent() string { return percent(c.Covered, c.Statements) }

// PackageCoverage is one package's statements, and how many the run
// reached.
type PackageCoverage struct {
	Path                string
	Statements, Covered int
}

// Percent is Covered of Statements, to one decimal.
func (p PackageCoverage) Percent() string { return percent(p.Covered, p.Statements) }

// Width is the share covered, for a bar.
func (p PackageCoverage) Width() string {
	if p.Statements == 0 {
		return "0"
	}
	return fmt.Sprintf("%.1f", 100*float64(p.Covered)/float64(p.Statements))
}

func percent(part, whole int) string {
	if whole == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// UnreachedFile is a file with statements nothing in the run reached.
type UnreachedFile struct {
	// File is its path below the source root, or its name in the profile
	// when it is not found there.
	File string
	// Statements is how many of its statements nothing reached.
	Statements int
	Ranges     []UnreachedRange
	// Note says why its lines are not shown.
	Note string
}

// UnreachedRange is a run of lines of unreached blocks.
type UnreachedRange struct {
	From, To int
	// Lines are its first lines, at most unreachedRangeLines; More counts
	// the others.
	Lines []SourceLine
	More  int
}

// SpecCoverage is what one spec reached.
type SpecCoverage struct {
	Name string
	// Href links to the spec on the page; empty when the run has no such
	// spec (a record of another run).
	Href  string
	State string
	// Files are the files it reached blocks of, sorted.
	Files []string
	// Incomplete says why its record lacks some processes' counters.
	Incomplete string
}

// coverageInput is where one run directory's coverage is: its merged
// text profile and its per-spec record.
type coverageInput struct{ dir, profile, record string }

// loadCoverage reads the coverage of the run in dir, nil when it has
// none; problems it says in the section's notes, as the rest of the page
// does without it.
func loadCoverage(dir string, run *Run, opts RenderOptions, sources *tree) *Coverage {
	return loadCoverages([]coverageInput{{dir, opts.CoverageProfile, opts.CoverageRecord}}, run, sources)
}

// loadCoverages reads the coverage of the runs (the shards of one run,
// or one run): their profiles added up block by block, their records'
// specs together; nil when none has any.
func loadCoverages(ins []coverageInput, run *Run, sources *tree) *Coverage {
	cov := &Coverage{}
	var whole *coverage.Profile
	var from []string
	found := false
	for _, in := range ins {
		_, recErr := os.Stat(filepath.Join(in.record, coverage.SpecsDir))
		_, profErr := os.Stat(in.profile)
		if recErr != nil && profErr != nil {
			continue
		}
		found = true
		var p *coverage.Profile
		source := in.profile
		if profErr == nil {
			var err error
			if p, err = readProfile(in.dir, in.profile); err != nil {
				cov.Notes = append(cov.Notes, fmt.Sprintf("the run's merged profile is left out: %v", err))
			}
		}
		if recErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), coverageLoadTimeout)
			rec, err := coverage.Load(ctx, in.record)
			cancel()
			if err != nil {
				cov.Notes = append(cov.Notes, fmt.Sprintf("the per-spec record in %s is left out: %v", in.record, err))
			} else {
				if p == nil {
					p, source = rec.Instrumented, in.record
				}
				cov.Specs = append(cov.Specs, specCoverage(rec, run, sources)...)
			}
		}
		switch {
		case p == nil:
		case whole == nil:
			whole = p
			from = append(from, source)
		default:
			if err := whole.Add(p); err != nil {
				cov.Notes = append(cov.Notes, fmt.Sprintf("%s is left out: %v", source, err))
				continue
			}
			from = append(from, source)
		}
	}
	if !found {
		return nil
	}
	sortByRun(cov.Specs, run)
	cov.Profile = strings.Join(from, ", ")
	if whole == nil {
		return cov
	}
	packageCoverage(cov, whole)
	unreached(cov, whole, sources)
	return cov
}

// readProfile reads the text profile at name, which must be a regular
// file below the run directory dir of at most maxCoverageProfile bytes.
func readProfile(dir, name string) (*coverage.Profile, error) {
	t, err := openTree(dir)
	if err != nil {
		return nil, err
	}
	rel, where := t.locate(name)
	if where != inside {
		return nil, fmt.Errorf("%s is not below the run directory %s", name, dir)
	}
	f, fi, err := t.open(rel)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := readAtMost(f, fi, maxCoverageProfile)
	if err != nil {
		return nil, err
	}
	return coverage.ParseProfile(bytes.NewReader(data))
}

// packageCoverage counts each package's statements, by the directory of
// its files' names in the profile.
func packageCoverage(cov *Coverage, p *coverage.Profile) {
	byPkg := map[string]*PackageCoverage{}
	for file, blocks := range p.Blocks {
		dir := path.Dir(file)
		pc := byPkg[dir]
		if pc == nil {
			pc = &PackageCoverage{Path: dir}
			byPkg[dir] = pc
		}
		for _, b := range blocks {
			pc.Statements += b.NumStmt
			if b.Count > 0 {
				pc.Covered += b.NumStmt
			}
		}
	}
	for _, pc := range byPkg {
		cov.Packages = append(cov.Packages, *pc)
		cov.Statements += pc.Statements
		cov.Covered += pc.Covered
	}
	slices.SortFunc(cov.Packages, func(a, b PackageCoverage) int { return cmp.Compare(a.Path, b.Path) })
}

// generatedCode matches the line Go's convention puts in a generated file
// (https://go.dev/s/generatedcode).
var generatedCode = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// unreached lists the files with blocks nothing reached, with their lines.
func unreached(cov *Coverage, p *coverage.Profile, sources *tree) {
	files := make([]string, 0, len(p.Blocks))
	for file := range p.Blocks {
		files = append(files, file)
	}
	slices.Sort(files)
	shown := 0
	for _, file := range files {
		var ranges []UnreachedRange
		stmts := 0
		for _, b := range p.Blocks[file] {
			if b.Count > 0 {
				continue
			}
			stmts += b.NumStmt
			if n := len(ranges); n > 0 && b.StartLine <= ranges[n-1].To+1 {
				ranges[n-1].To = max(ranges[n-1].To, b.EndLine)
				continue
			}
			ranges = append(ranges, UnreachedRange{From: b.StartLine, To: b.EndLine})
		}
		if stmts == 0 {
			continue
		}
		uf := UnreachedFile{File: file, Statements: stmts}
		var data []byte
		if sources == nil {
			uf.Note = noteNoSourceRoot
		} else if rel, why := sources.find(file, false); rel == "" {
			uf.Note = why
		} else {
			uf.File = filepath.ToSlash(rel)
			data, uf.Note = sources.readShown(rel)
		}
		if data != nil && generatedCode.Match(data[:min(len(data), 4096)]) {
			cov.Generated++
			continue
		}
		if len(cov.Unreached) == unreachedFiles {
			cov.UnreachedMore++
			continue
		}
		if data != nil && shown >= unreachedLines {
			data, uf.Note = nil, fmt.Sprintf("the page shows at most %d unreached lines", unreachedLines)
		}
		if data != nil {
			lines := strings.Split(string(data), "\n")
			inFile := 0
			for i := range ranges {
				r := &ranges[i]
				for n := r.From; n <= min(r.To, len(lines)); n++ {
					if len(r.Lines) == unreachedRangeLines || inFile == unreachedFileLines {
						r.More = r.To - n + 1
						break
					}
					r.Lines = append(r.Lines, SourceLine{N: n, Text: strings.ReplaceAll(cutLine(lines[n-1]), "\t", "    ")})
					shown++
					inFile++
				}
			}
		}
		uf.Ranges = ranges
		cov.Unreached = append(cov.Unreached, uf)
	}
}

// specCoverage lists each recorded spec with the files it reached.
func specCoverage(rec *coverage.Record, run *Run, sources *tree) []SpecCoverage {
	href := map[string]string{}
	for _, s := range run.Specs {
		if s.FullText != "" {
			href[s.FullText] = "#row-" + s.ID
		}
	}
	names := map[string]string{}
	name := func(file string) string {
		if n, ok := names[file]; ok {
			return n
		}
		n := file
		if sources != nil {
			if rel, _ := sources.find(file, false); rel != "" {
				n = filepath.ToSlash(rel)
			}
		}
		names[file] = n
		return n
	}
	var out []SpecCoverage
	for _, s := range rec.Specs {
		sc := SpecCoverage{Name: s.Text, Href: href[s.Text], State: s.State, Incomplete: s.Incomplete}
		if s.Profile != nil {
			for file, blocks := range s.Profile.Blocks {
				if slices.ContainsFunc(blocks, func(b coverage.Block) bool { return b.Count > 0 }) {
					sc.Files = append(sc.Files, name(file))
				}
			}
		}
		slices.Sort(sc.Files)
		out = append(out, sc)
	}
	sortByRun(out, run)
	return out
}

// sortByRun orders specs as the run lists them, those it does not know
// last, in the order they come.
func sortByRun(specs []SpecCoverage, run *Run) {
	order := map[string]int{}
	for i, s := range run.Specs {
		if s.FullText != "" {
			order[s.FullText] = i
		}
	}
	slices.SortStableFunc(specs, func(a, b SpecCoverage) int {
		ia, aok := order[a.Name]
		ib, bok := order[b.Name]
		switch {
		case aok && bok:
			return cmp.Compare(ia, ib)
		case aok:
			return -1
		case bok:
			return 1
		}
		return 0
	})
}
