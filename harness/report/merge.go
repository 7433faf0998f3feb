package report

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// ShardRun is one machine's part of a run split into shards (Merge).
type ShardRun struct {
	// Name says which part: "shard 2 of 3", in the order Merge was given.
	Name string
	// Dir is the part's run directory.
	Dir string
	// Wall is the part's own wall time: its suites' first start to last
	// end. The slowest part's is what the run took.
	Wall time.Duration
	// Ran and Failed count the specs the part ran and those that failed.
	Ran, Failed int
}

// Merge reads the runs in dirs, the shards of one suite run on several
// machines (each the --output-dir of a ginkgo run, its JSON report at
// JSONReportFile, its bundles below it), and writes them as one run into
// opts.OutDir, which must be set: every spec once (where it ran; a spec
// every shard skipped, once), failures first, a timeline row per process
// of every shard, each failure's bundle from its own shard's directory,
// and each shard's wall time (Run.Shards). OutDir must be a directory
// only the caller (or root) can change, as Write's.
func Merge(dirs []string, opts RenderOptions) (*Written, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no run directories to merge")
	}
	if opts.OutDir == "" {
		return nil, errors.New("merging runs needs the directory to write the page to (OutDir)")
	}
	name := opts.JSONReport
	if name == "" {
		name = JSONReportFile
	}
	opts.JSONReport = ""
	opts = withDefaults(opts.OutDir, opts)
	out, err := openOutDir(opts.OutDir, "the report", outDirFix)
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Close() }()
	var parts []*runPart
	for _, dir := range dirs {
		report := name
		if !filepath.IsAbs(report) {
			report = filepath.Join(dir, report)
		}
		p, err := readPart(dir, report)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		parts = append(parts, p)
	}
	shards := shardWalls(parts)
	onlyWhereRan(parts)
	run, err := finish(parts, opts)
	if err != nil {
		return nil, err
	}
	run.Source = fmt.Sprintf("%d runs: %s", len(dirs), filepath.Join("<run>", name))
	run.Suites = slices.Compact(slices.Sorted(slices.Values(run.Suites)))
	// Each shard's timelines, named for it.
	i := 0
	for pi, p := range parts {
		for range p.suites {
			if i < len(run.Timelines) {
				run.Timelines[i].Suite += " · " + shards[pi].Name
			}
			i++
		}
	}
	for _, s := range run.Specs {
		if s.IsSuiteNode() || s.Outcome == Skipped {
			continue
		}
		shards[s.part].Ran++
		if s.Outcome == Failed {
			shards[s.part].Failed++
		}
	}
	run.Shards = shards
	// Each shard's coverage, where it has some (make e2e COVER=1 with
	// SHARD): their profiles added up, their per-spec records together.
	var sources *tree
	if opts.SourceRoot != "" {
		sources, _ = openTree(opts.SourceRoot) // finish said why not
	}
	ins := make([]coverageInput, len(dirs))
	for i, dir := range dirs {
		ins[i] = coverageInput{dir, filepath.Join(dir, CoverageProfileFile), filepath.Join(dir, SpecCoverageDir)}
	}
	run.Coverage = loadCoverages(ins, run, sources)
	return writeRun(out, run, opts)
}

// shardWalls are the parts' names and wall times.
func shardWalls(parts []*runPart) []ShardRun {
	out := make([]ShardRun, len(parts))
	for i, p := range parts {
		var start, end time.Time
		for _, attempts := range p.suites {
			if len(attempts) == 0 {
				continue
			}
			final := attempts[len(attempts)-1]
			if start.IsZero() || (!final.StartTime.IsZero() && final.StartTime.Before(start)) {
				start = final.StartTime
			}
			if final.EndTime.After(end) {
				end = final.EndTime
			}
		}
		out[i] = ShardRun{Name: fmt.Sprintf("shard %d of %d", i+1, len(parts)), Dir: p.dir}
		if !start.IsZero() && end.After(start) {
			out[i].Wall = end.Sub(start)
		}
	}
	return out
}

// onlyWhereRan leaves each spec in the reports of the part that ran it:
// a shard's run reports every other shard's specs as skipped. A spec no
// part ran stays once, in the first part that reports it. Suite nodes
// (BeforeSuite, ...) are every part's own.
func onlyWhereRan(parts []*runPart) {
	key := func(r types.Report, sr types.SpecReport) string { return r.SuiteDescription + "\x00" + specKey(sr) }
	ran := map[string]bool{}
	for _, p := range parts {
		for _, attempts := range p.suites {
			for _, r := range attempts {
				for _, sr := range r.SpecReports {
					if !sr.LeafNodeType.Is(types.NodeTypesForSuiteLevelNodes) && !sr.State.Is(types.SpecStateSkipped|types.SpecStatePending) {
						ran[key(r, sr)] = true
					}
				}
			}
		}
	}
	kept := map[string]bool{}
	for _, p := range parts {
		for _, attempts := range p.suites {
			for ai := range attempts {
				r := &attempts[ai]
				final := ai == len(attempts)-1
				var out types.SpecReports
				for _, sr := range r.SpecReports {
					k := key(*r, sr)
					switch {
					case sr.LeafNodeType.Is(types.NodeTypesForSuiteLevelNodes):
					case !sr.State.Is(types.SpecStateSkipped | types.SpecStatePending):
					case ran[k] || (final && kept[k]):
						continue
					}
					if final {
						kept[k] = true
					}
					out = append(out, sr)
				}
				r.SpecReports = out
			}
		}
	}
}
