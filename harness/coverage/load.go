package coverage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/kubeharness/kubeharness/harness/internal/safefile"
)

// Record is a suite's per-spec coverage record (RecordSpecs), read back.
type Record struct {
	// Dir is the directory it was read from.
	Dir string
	// Specs are the specs recorded, ordered by file, line and text.
	Specs []RecordedSpec
	// Outside is what was reached outside every spec: suite setup, and
	// the counters of processes not asked per spec; nil when no counter
	// was outside a spec.
	Outside *Profile
	// Instrumented is every block any profile of the record lists,
	// reached or not: the code coverage counted.
	Instrumented *Profile
}

// RecordedSpec is one spec of a Record.
type RecordedSpec struct {
	// ID is the name of its directory (SpecID).
	ID string
	SpecInfo
	// Profile holds the blocks of every process that counted during the
	// spec; nil when none did (the test binary had no coverage and no
	// process was asked).
	Profile *Profile
}

// Reached says the spec ran block b of file.
func (s RecordedSpec) Reached(file string, b Block) bool {
	if s.Profile == nil {
		return false
	}
	return reached(s.Profile, file, b)
}

func reached(p *Profile, file string, b Block) bool {
	blocks := p.Blocks[file]
	i, found := slices.BinarySearchFunc(blocks, b, func(x, y Block) int {
		return cmp.Or(cmp.Compare(x.StartLine, y.StartLine), cmp.Compare(x.StartCol, y.StartCol),
			cmp.Compare(x.EndLine, y.EndLine), cmp.Compare(x.EndCol, y.EndCol))
	})
	return found && blocks[i].Count > 0
}

// Load reads the record in dir: every spec's directory below
// dir/specs, and every other directory below dir that holds coverage data
// as outside every spec. It reads coverage data with `go tool covdata
// textfmt`, so it needs the go command (of the Go release that wrote the
// data, or a later one).
func Load(ctx context.Context, dir string) (*Record, error) {
	rec := &Record{Dir: dir}
	var outside []string
	specDirs := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if filepath.Dir(p) == filepath.Join(dir, SpecsDir) {
			specDirs[p] = true
			return filepath.SkipDir
		}
		if hasCovData(p) {
			outside = append(outside, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the coverage record: %w", err)
	}
	tool, err := covdataTool(ctx)
	if err != nil {
		return nil, err
	}
	for p := range specDirs {
		data, err := safefile.Read(filepath.Join(p, SpecFile), 1<<20)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a spec that did not end, or not a spec's directory
		}
		if err != nil {
			return nil, err
		}
		var s RecordedSpec
		if err := json.Unmarshal(data, &s.SpecInfo); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(p, SpecFile), err)
		}
		s.ID = filepath.Base(p)
		rec.Specs = append(rec.Specs, s)
	}
	if len(rec.Specs) == 0 {
		return nil, fmt.Errorf("%s holds no per-spec coverage record (%s/<id>/%s): was the suite run with coverage.RecordSpecs and its directory there?",
			dir, SpecsDir, SpecFile)
	}
	slices.SortFunc(rec.Specs, func(a, b RecordedSpec) int {
		return cmp.Or(cmp.Compare(a.RepoFile, b.RepoFile), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Text, b.Text))
	})

	// One covdata run per spec, a few at a time.
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
		errs = make([]error, len(rec.Specs)+1)
	)
	for i := range rec.Specs {
		p := filepath.Join(dir, SpecsDir, rec.Specs[i].ID)
		if !hasCovData(p) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rec.Specs[i].Profile, errs[i] = textProfile(ctx, tool, p)
		}()
	}
	if len(outside) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rec.Outside, errs[len(rec.Specs)] = textProfile(ctx, tool, outside...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rec.Instrumented = &Profile{Blocks: map[string][]Block{}}
	for _, p := range append([]*Profile{rec.Outside}, specProfiles(rec.Specs)...) {
		if p == nil {
			continue
		}
		for file, blocks := range p.Blocks {
			rec.Instrumented.Blocks[file] = append(rec.Instrumented.Blocks[file], blocks...)
		}
	}
	for file, blocks := range rec.Instrumented.Blocks {
		rec.Instrumented.Blocks[file] = mergeBlocks(blocks)
	}
	return rec, nil
}

func specProfiles(specs []RecordedSpec) []*Profile {
	out := make([]*Profile, len(specs))
	for i, s := range specs {
		out[i] = s.Profile
	}
	return out
}

// hasCovData says dir holds a coverage meta-data file.
func hasCovData(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "covmeta.*"))
	return len(m) > 0
}

// covdataTool is the command line that runs go tool covdata: the tool's
// own binary when the go command names it (go tool -n), which spares a
// go command per spec.
func covdataTool(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "go", "tool", "-n", "covdata").Output()
	if p := strings.TrimSpace(string(out)); err == nil && p != "" && !strings.ContainsAny(p, "\n ") {
		return []string{p}, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("reading coverage data needs the go command (go tool covdata): %w", err)
	}
	return []string{"go", "tool", "covdata"}, nil
}

// textProfile is the text profile of the coverage data in dirs, which
// covdata merges.
func textProfile(ctx context.Context, tool []string, dirs ...string) (*Profile, error) {
	for _, d := range dirs {
		if strings.Contains(d, ",") {
			return nil, fmt.Errorf("%s: go tool covdata cannot read a directory whose name holds a comma", d)
		}
	}
	tmp, err := os.CreateTemp("", "coverage-*.txt")
	if err != nil {
		return nil, err
	}
	_ = tmp.Close()
	defer func() { _ = os.Remove(tmp.Name()) }()
	args := append(slices.Clone(tool[1:]), "textfmt", "-i="+strings.Join(dirs, ","), "-o="+tmp.Name())
	cmd := exec.CommandContext(ctx, tool[0], args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool covdata textfmt -i %s: %w: %s", strings.Join(dirs, ","), err, strings.TrimSpace(stderr.String()))
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return ParseProfile(f)
}
