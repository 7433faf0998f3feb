package coverage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/internal/safefile"
	"github.com/kubeharness/kubeharness/harness/shard"
)

// DefaultIgnore are the files Affected takes no spec to depend on, when
// Options.Ignore is nil: documentation, and the repository's own
// bookkeeping.
var DefaultIgnore = []string{
	"*.md", "*.markdown", "*.rst", "*.adoc", "docs/", "LICENSE*", "NOTICE*", "AUTHORS*", "OWNERS*",
	"CODEOWNERS", ".gitignore", ".gitattributes", ".github/",
}

// Options say what Affected compares.
type Options struct {
	// Repo is a directory in the git repository; by default the working
	// directory.
	Repo string
	// Since is the commit the changes are taken from (`git diff Since`
	// and untracked files): the commit the record was made at, or one
	// the changes under test start from that the record still fits.
	Since string
	// Record is the directory of the record (RecordSpecs; several
	// merged by copying them into one).
	Record string
	// DryRun are the reports of `ginkgo --dry-run --json-report`: the
	// specs the suite has now (as harness/shard reads them), so that a
	// spec the record does not know is selected, and the selection can
	// be packed into shards with the same timings. Without it the specs
	// are the record's, keyed by their full text.
	DryRun []types.Report
	// Packages are `go list` patterns of the suite and of the binaries it
	// runs ("./e2e", "./cmd/manager"): a Go file outside the packages
	// they are built from (go list -deps -test) changes no spec, and the
	// files they embed (//go:embed) change all. Without them every Go
	// file may, and embedded files are found only by being no Go code.
	Packages []string
	// Ignore are patterns of files no spec depends on: "name" or "*.ext"
	// match a file's base name (path.Match), "dir/" everything below a
	// directory of the repository's root. nil is DefaultIgnore. A file
	// the packages embed is never ignored.
	Ignore []string
}

// Selection is the specs a change needs.
type Selection struct {
	// Since is the commit the changes were taken from.
	Since string
	// Specs are the specs to run, in the dry run's (or the record's)
	// order: what shard.Pack takes to split them across machines.
	Specs []shard.Spec
	// Total is how many specs the suite has.
	Total int
	// All says every spec runs, for AllReasons: a change coverage
	// cannot see.
	All        bool
	AllReasons []string
	// Reasons say why each selected spec runs, by shard.Spec.Key.
	Reasons map[string][]string
	// Notes are what the reader should know of the inputs: a record
	// made at another commit, a spec list taken from the record.
	Notes []string
}

// GinkgoArgs are the arguments that make Ginkgo run exactly the selected
// specs, as harness/shard writes a shard's (shard.Shard.GinkgoArgs): with
// nothing selected, a focus that matches no file, so Ginkgo runs nothing.
func (s *Selection) GinkgoArgs() []string {
	return shard.Shard{Index: 1, Specs: s.Specs}.GinkgoArgs()
}

// Summary is one line that says what was selected and, for every spec,
// why.
func (s *Selection) Summary() string {
	switch {
	case s.All:
		return fmt.Sprintf("every spec (%d) is affected by the changes since %s: %s", s.Total, s.Since, strings.Join(s.AllReasons, "; "))
	case len(s.Specs) == 0:
		return fmt.Sprintf("no spec (of %d) is affected by the changes since %s: nothing to run", s.Total, s.Since)
	default:
		return fmt.Sprintf("%d of %d specs are affected by the changes since %s", len(s.Specs), s.Total, s.Since)
	}
}

// Affected chooses the specs the changes since opts.Since need, from the
// record in opts.Record:
//
//   - a spec that reached a block (of the record's) that holds a changed
//     line: a line of the file as it was at Since, changed or removed, or
//     next to lines inserted; a change on a line of a function that is in
//     no block selects the specs that reached the function; a block
//     reached outside every spec (suite setup, processes not recorded per
//     spec) selects every spec;
//   - a spec whose _test.go file changed; every spec of a directory whose
//     _test.go file without specs (a helper) changed;
//   - a spec the record does not know (new, renamed, or moved to another
//     line since), or whose record is incomplete;
//   - every spec, when a change is one coverage cannot see: a file that is
//     no Go code (config/, CRDs, go.mod and go.sum, the Makefile,
//     testdata/, embedded files: anything opts.Ignore does not name), Go
//     code coverage did not count (outside -coverpkg), a constant,
//     variable or type other packages see, an init function or another
//     declaration that runs when the program starts;
//   - the specs that reached a package, when an identifier only it sees
//     is declared anew, or a method is added to one of its types (it may
//     satisfy an interface now).
//
// A change of comments or blank lines only, a new function, and a file no
// package of opts.Packages is built from select nothing. A file renamed
// into another directory changes every line.
func Affected(ctx context.Context, opts Options) (*Selection, error) {
	if opts.Since == "" {
		return nil, errors.New("affected: no commit to take the changes from (Options.Since)")
	}
	if opts.Record == "" {
		return nil, errors.New("affected: no coverage record (Options.Record)")
	}
	repo := opts.Repo
	if repo == "" {
		repo = "."
	}
	out, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("affected: %s is not in a git repository: %w", repo, err)
	}
	top := strings.TrimSpace(string(out))
	sinceCommit, err := git(ctx, top, "rev-parse", "--verify", "--end-of-options", opts.Since+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("affected: %q names no commit: %w", opts.Since, err)
	}
	rec, err := Load(ctx, opts.Record)
	if err != nil {
		return nil, err
	}
	s := &selector{opts: opts, top: top, since: opts.Since, rec: rec, reasons: map[int][]string{}}
	s.sel = &Selection{Since: opts.Since, Reasons: map[string][]string{}}
	if opts.Ignore == nil {
		s.opts.Ignore = DefaultIgnore
	}
	s.currentSpecs()
	s.sel.Total = len(s.specs)
	s.noteCommit(strings.TrimSpace(string(sinceCommit)))
	if err := s.modules(ctx); err != nil {
		return nil, err
	}
	if len(opts.Packages) > 0 {
		if s.scope, err = listScope(ctx, top, opts.Packages); err != nil {
			return nil, err
		}
	}
	cs, err := changes(ctx, top, opts.Since)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if err := s.change(ctx, c); err != nil {
			return nil, err
		}
	}
	s.unrecorded()
	return s.result(), nil
}

// current is a spec of the suite now.
type current struct {
	spec     shard.Spec
	text     string
	repoFile string
	records  []*RecordedSpec // the record's of it, complete ones
}

// selector is Affected's state.
type selector struct {
	opts    Options
	top     string
	since   string
	rec     *Record
	specs   []current
	scope   *scope
	mods    map[string]string // module path → directory (repository-relative, "" for the root)
	profile map[string]string // repository path → the profile's name of the file
	pkgs    map[string][]string

	all     []string
	reasons map[int][]string
	sel     *Selection
}

// currentSpecs lists the suite's specs, from the dry run or the record,
// each with its records.
func (s *selector) currentSpecs() {
	if len(s.opts.DryRun) == 0 {
		s.sel.Notes = append(s.sel.Notes, "the specs are the record's (no dry run given): a spec added since is not known")
		for i := range s.rec.Specs {
			r := &s.rec.Specs[i]
			file := r.RepoFile
			if file == "" {
				file = r.File
			}
			sp := shard.Spec{Key: r.Text, File: file, Line: r.Line, Group: file + ":" + strconv.Itoa(r.Line)}
			s.specs = append(s.specs, current{spec: sp, text: r.Text, repoFile: r.RepoFile})
		}
	} else {
		byLine := map[int][]types.SpecReport{}
		for _, r := range s.opts.DryRun {
			for _, sr := range r.SpecReports {
				if sr.LeafNodeType == types.NodeTypeIt {
					byLine[sr.LeafNodeLocation.LineNumber] = append(byLine[sr.LeafNodeLocation.LineNumber], sr)
				}
			}
		}
		for _, sp := range shard.Specs(s.opts.DryRun) {
			c := current{spec: sp}
			// The dry run's spec at that line whose file ends in sp.File
			// and whose text ends sp.Key (suite | full text).
			for _, sr := range byLine[sp.Line] {
				f := sr.LeafNodeLocation.FileName
				if (f == sp.File || strings.HasSuffix(filepath.ToSlash(f), "/"+sp.File)) && strings.HasSuffix(sp.Key, " | "+sr.FullText()) {
					c.text = sr.FullText()
					c.repoFile = s.repoPath(f)
					break
				}
			}
			s.specs = append(s.specs, c)
		}
	}
	byKey := map[string][]*RecordedSpec{}
	for i := range s.rec.Specs {
		r := &s.rec.Specs[i]
		if r.Profile == nil || r.Incomplete != "" {
			continue
		}
		k := r.RepoFile + "\x00" + strconv.Itoa(r.Line) + "\x00" + r.Text
		byKey[k] = append(byKey[k], r)
	}
	for i := range s.specs {
		c := &s.specs[i]
		c.records = byKey[c.repoFile+"\x00"+strconv.Itoa(c.spec.Line)+"\x00"+c.text]
	}
}

// repoPath is file relative to the repository's root, with slashes. A
// file elsewhere (a dry run made in another checkout) is the longest tail
// of its path that names a file in the repository; file itself when none
// does.
func (s *selector) repoPath(file string) string {
	if rel, err := filepath.Rel(s.top, file); err == nil && filepath.IsAbs(file) && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	parts := strings.Split(strings.Trim(filepath.ToSlash(file), "/"), "/")
	for i := range parts {
		tail := strings.Join(parts[i:], "/")
		if st, err := os.Stat(filepath.Join(s.top, filepath.FromSlash(tail))); err == nil && st.Mode().IsRegular() {
			return tail
		}
	}
	return filepath.ToSlash(file)
}

func (s *selector) noteCommit(since string) {
	var other []string
	for _, r := range s.rec.Specs {
		if r.Commit != "" && r.Commit != since && !slices.Contains(other, r.Commit) {
			other = append(other, r.Commit)
		}
	}
	if len(other) > 0 {
		s.sel.Notes = append(s.sel.Notes, fmt.Sprintf("the record was made at %s, not at %s (%s): lines changed in between may be matched to the wrong blocks",
			strings.Join(other, ", "), s.since, since))
	}
}

// modules maps the Go modules of the repository, as they were at Since,
// to their directories, and the record's files to repository paths.
func (s *selector) modules(ctx context.Context) error {
	out, err := git(ctx, s.top, "ls-tree", "-r", "-z", "--name-only", "--full-tree", s.since)
	if err != nil {
		return err
	}
	s.mods = map[string]string{}
	for _, name := range strings.Split(string(out), "\x00") {
		if name != "go.mod" && !strings.HasSuffix(name, "/go.mod") {
			continue
		}
		data, err := git(ctx, s.top, "show", s.since+":"+name)
		if err != nil {
			return err
		}
		if mp := modfile.ModulePath(data); mp != "" {
			s.mods[mp] = strings.TrimSuffix(strings.TrimSuffix(name, "go.mod"), "/")
		}
	}
	s.profile = map[string]string{}
	s.pkgs = map[string][]string{}
	for file := range s.rec.Instrumented.Blocks {
		rp, ok := s.fromImportPath(file)
		if !ok {
			continue
		}
		s.profile[rp] = file
		s.pkgs[path.Dir(rp)] = append(s.pkgs[path.Dir(rp)], file)
	}
	return nil
}

// fromImportPath is the repository path of a profile's file name
// (import path / file name), by the longest module path that holds it.
func (s *selector) fromImportPath(file string) (string, bool) {
	best := ""
	found := false
	for mp := range s.mods {
		if strings.HasPrefix(file, mp+"/") && len(mp) >= len(best) {
			best, found = mp, true
		}
	}
	if !found {
		return "", false
	}
	return path.Join(s.mods[best], strings.TrimPrefix(file, best+"/")), true
}

func (s *selector) everySpec(reason string) {
	if !slices.Contains(s.all, reason) {
		s.all = append(s.all, reason)
	}
}

func (s *selector) add(i int, reason string) {
	if !slices.Contains(s.reasons[i], reason) {
		s.reasons[i] = append(s.reasons[i], reason)
	}
}

// ignored says opts.Ignore names the file.
func (s *selector) ignored(p string) bool {
	for _, pat := range s.opts.Ignore {
		if dir, ok := strings.CutSuffix(pat, "/"); ok {
			if strings.HasPrefix(p, dir+"/") {
				return true
			}
			continue
		}
		if ok, _ := path.Match(pat, path.Base(p)); ok {
			return true
		}
	}
	return false
}

// change selects what one changed file needs.
func (s *selector) change(ctx context.Context, c change) error {
	p := c.path()
	paths := slices.DeleteFunc([]string{c.Old, c.New}, func(x string) bool { return x == "" })
	for _, x := range paths {
		if s.scope != nil && s.scope.embedded[x] {
			s.everySpec(x + " changed: a file the suite's code embeds (//go:embed)")
			return nil
		}
	}
	if !slices.ContainsFunc(paths, func(x string) bool { return !s.ignored(x) }) {
		return nil
	}
	for _, x := range paths {
		switch {
		case path.Base(x) == "go.mod" || path.Base(x) == "go.sum":
			s.everySpec(x + " changed: the module's requirements")
			return nil
		case !strings.HasSuffix(x, ".go"):
			s.everySpec(x + " changed: coverage cannot see who reads a file that is no Go code")
			return nil
		case slices.Contains(strings.Split(x, "/"), "testdata"):
			s.everySpec(x + " changed: test data coverage cannot see")
			return nil
		}
	}
	if strings.HasSuffix(c.Old, "_test.go") || strings.HasSuffix(c.New, "_test.go") {
		s.testFile(c)
		return nil
	}
	if s.scope != nil && !slices.ContainsFunc(paths, s.scope.builds) {
		return nil // not built into the suite or a binary it runs
	}
	return s.goFile(ctx, c, p)
}

// testFile selects the specs a changed _test.go file holds, or, for one
// without specs in a directory of spec files, every spec there.
func (s *selector) testFile(c change) {
	found := false
	for i, sp := range s.specs {
		if sp.repoFile != "" && (sp.repoFile == c.New || sp.repoFile == c.Old) {
			s.add(i, "its file "+sp.repoFile+" changed")
			found = true
		}
	}
	if found {
		return
	}
	for _, x := range []string{c.Old, c.New} {
		if x == "" {
			continue
		}
		dir := path.Dir(x)
		for i, sp := range s.specs {
			if sp.repoFile != "" && path.Dir(sp.repoFile) == dir {
				s.add(i, x+", a test file of its suite without specs, changed")
			}
		}
	}
}

// goFile selects what a changed Go file (not a test) needs, line by line.
func (s *selector) goFile(ctx context.Context, c change, p string) error {
	var oldSrc, newSrc *goSource
	if c.Old != "" {
		data, err := git(ctx, s.top, "show", s.since+":"+c.Old)
		if err != nil {
			return err
		}
		if oldSrc, err = parseGo(data); err != nil {
			s.everySpec(fmt.Sprintf("%s changed, and as it was at %s it does not parse: %v", c.Old, s.since, err))
			return nil
		}
	}
	if c.New != "" {
		data, err := safefile.Read(filepath.Join(s.top, filepath.FromSlash(c.New)), 64<<20)
		if err != nil {
			return err
		}
		if newSrc, err = parseGo(data); err != nil {
			s.everySpec(fmt.Sprintf("%s changed, and it does not parse: %v", c.New, err))
			return nil
		}
	}
	dir := path.Dir(p)
	if c.Old != "" {
		dir = path.Dir(c.Old)
	}
	if len(s.pkgs[dir]) == 0 && c.Old != "" {
		s.everySpec(c.Old + " changed: Go code coverage did not count (is its package in -coverpkg?)")
		return nil
	}
	f := fileCtx{sel: s, name: c.Old, newName: c.New, profile: s.profile[c.Old], dir: dir, oldSrc: oldSrc, newSrc: newSrc}
	hunks := c.Hunks
	switch {
	case c.Old == "" || c.Status == 'A' || c.Status == '?':
		// A new file: every line is new.
		f.oldSrc = nil
		hunks = []hunk{{NewStart: 1, NewLines: newSrc.lines}}
	case c.New != "" && path.Dir(c.Old) != path.Dir(c.New):
		// Moved into another package: every line changed.
		hunks = []hunk{{OldStart: 1, OldLines: oldSrc.lines, NewStart: 1, NewLines: newSrc.lines}}
	case len(hunks) == 0 && c.Status != 'R':
		// A change git shows no lines of: take it as all of them.
		hunks = []hunk{{OldStart: 1, OldLines: oldSrc.lines}}
		if newSrc != nil {
			hunks[0].NewStart, hunks[0].NewLines = 1, newSrc.lines
		}
	}
	for _, h := range hunks {
		if f.oldSrc != nil {
			for l := h.OldStart; l < h.OldStart+h.OldLines; l++ {
				if f.oldSrc.code[l] {
					f.oldLine(l)
				}
			}
		}
		if newSrc != nil {
			for l := h.NewStart; l < h.NewStart+h.NewLines; l++ {
				if newSrc.code[l] {
					f.newLine(l, h)
				}
			}
		}
	}
	return nil
}

// fileCtx is a changed Go file as goFile reads it.
type fileCtx struct {
	sel            *selector
	name           string // its path at Since
	newName        string // its path now
	profile        string // its name in the record's profiles
	dir            string // its package's directory at Since
	oldSrc, newSrc *goSource
}

// blocksIn are the file's instrumented blocks that overlap lines
// [from, to].
func (f *fileCtx) blocksIn(from, to int) []Block {
	var out []Block
	for _, b := range f.sel.rec.Instrumented.Blocks[f.profile] {
		if b.StartLine <= to && from <= b.EndLine {
			out = append(out, b)
		}
	}
	return out
}

// oldLine selects what a changed or removed line of code at Since needs.
func (f *fileCtx) oldLine(l int) {
	where := f.name + ":" + strconv.Itoa(l)
	if blocks := f.blocksIn(l, l); len(blocks) > 0 {
		f.sel.blocks(f.profile, blocks, where+" changed")
		return
	}
	d := f.oldSrc.declAt(l)
	switch {
	case d == nil:
		// The package clause: renaming a package changes its
		// importers, which changed too.
	case d.kind == declFunc:
		f.function(d, where+" (in "+d.name+") changed")
	case d.kind == declImport:
		if d.sideEffects {
			f.sel.everySpec(where + " changed: an import for its side effects (_ or .)")
		}
	case d.sideEffects:
		f.sel.everySpec(where + " changed: a declaration that runs when the program starts")
	case d.exported():
		f.sel.everySpec(where + " changed: a declaration other packages see (" + d.name + "), whose users coverage cannot tell")
	default:
		f.sel.pkg(f.dir, where+" changed: a declaration of its package ("+d.name+")")
	}
}

// function selects the specs that reached a function of the file at
// Since, or, when it has no blocks, its package.
func (f *fileCtx) function(d *decl, reason string) {
	if blocks := f.blocksIn(d.start, d.end); len(blocks) > 0 {
		f.sel.blocks(f.profile, blocks, reason)
		return
	}
	f.sel.pkg(f.dir, reason)
}

// newLine selects what a line of code of the file now needs (inserted or
// a replacement of the lines of h at Since).
func (f *fileCtx) newLine(l int, h hunk) {
	where := f.name + ":" + strconv.Itoa(h.OldStart)
	newWhere := where
	if f.oldSrc == nil {
		newWhere = "the new file " + f.newName
	}
	d := f.newSrc.declAt(l)
	switch {
	case d == nil:
		// The package clause, as in oldLine.
	case d.kind == declFunc:
		var old *decl
		if f.oldSrc != nil {
			old = f.oldSrc.funcNamed(d.name)
		}
		switch {
		case old != nil:
			// Lines into an existing function: the blocks around the
			// place at Since, else the function's.
			from, to := h.OldStart, h.OldStart+max(h.OldLines, 1)
			from, to = max(from, old.start), min(to, old.end)
			if blocks := f.blocksIn(from, to); from <= to && len(blocks) > 0 {
				f.sel.blocks(f.profile, blocks, where+" (in "+d.name+") changed")
				return
			}
			f.function(old, where+" (in "+d.name+") changed")
		case d.sideEffects:
			f.sel.everySpec(newWhere + ": a new init function")
		case d.method:
			f.sel.pkg(f.dir, newWhere+": a new method "+d.name+" (its type may satisfy an interface now)")
		}
	case d.kind == declImport:
		if d.sideEffects {
			f.sel.everySpec(newWhere + ": an import for its side effects (_ or .)")
		}
	case d.sideEffects:
		f.sel.everySpec(newWhere + ": a declaration that runs when the program starts")
	default:
		if f.oldSrc == nil || !slices.ContainsFunc(d.names, f.oldSrc.declares) {
			return // new identifiers: what uses them changed too
		}
		if d.exported() {
			f.sel.everySpec(where + " changed: a declaration other packages see (" + d.name + "), whose users coverage cannot tell")
			return
		}
		f.sel.pkg(f.dir, where+" changed: a declaration of its package ("+d.name+")")
	}
}

// blocks selects the specs that reached any of blocks of the profile's
// file; a block reached outside every spec selects every spec.
func (s *selector) blocks(file string, blocks []Block, reason string) {
	for _, b := range blocks {
		if s.rec.Outside != nil && reached(s.rec.Outside, file, b) {
			s.everySpec(reason + ": code reached outside any spec (suite setup, or a process not recorded per spec)")
			return
		}
	}
	for i, c := range s.specs {
		for _, r := range c.records {
			if slices.ContainsFunc(blocks, func(b Block) bool { return r.Reached(file, b) }) {
				s.add(i, reason)
				break
			}
		}
	}
}

// pkg selects the specs that reached any block of the package in dir.
// What was reached outside every spec does not count here: package
// startup reaches most packages, and an identifier the package alone sees
// only matters through its code the specs reached.
func (s *selector) pkg(dir, reason string) {
	for i, c := range s.specs {
		for _, file := range s.pkgs[dir] {
			blocks := s.rec.Instrumented.Blocks[file]
			if slices.ContainsFunc(c.records, func(r *RecordedSpec) bool {
				return slices.ContainsFunc(blocks, func(b Block) bool { return r.Reached(file, b) })
			}) {
				s.add(i, reason)
				break
			}
		}
	}
}

// unrecorded selects the specs without a record.
func (s *selector) unrecorded() {
	for i, c := range s.specs {
		if len(c.records) == 0 {
			s.add(i, "no record of it: new, moved, or not run when the record was made")
		}
	}
}

func (s *selector) result() *Selection {
	sel := s.sel
	sel.AllReasons = s.all
	sel.All = len(s.all) > 0
	for i, c := range s.specs {
		if sel.All {
			sel.Specs = append(sel.Specs, c.spec)
			continue
		}
		if rs := s.reasons[i]; len(rs) > 0 {
			sel.Specs = append(sel.Specs, c.spec)
			sel.Reasons[c.spec.Key] = append(sel.Reasons[c.spec.Key], rs...)
		}
	}
	return sel
}

// scope is what the packages of Options.Packages are built from.
type scope struct {
	dirs     map[string]bool // package directories, repository-relative
	files    map[string]bool // Go files built
	ignored  map[string]bool // Go files of those packages not built here
	embedded map[string]bool // files embedded
}

// builds says a Go file belongs to a package of the scope and is built
// (on this platform) or is new there.
func (sc *scope) builds(p string) bool {
	if sc.files[p] {
		return true
	}
	return sc.dirs[path.Dir(p)] && !sc.ignored[p]
}

// listScope runs go list -deps -test on the patterns in the repository.
func listScope(ctx context.Context, top string, patterns []string) (*scope, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-e", "-deps", "-test", "-json=Dir,GoFiles,CgoFiles,IgnoredGoFiles,TestGoFiles,XTestGoFiles,EmbedFiles,TestEmbedFiles,XTestEmbedFiles,Standard"}, patterns...)...)
	cmd.Dir = top
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps -test %s: %w: %s", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	sc := &scope{dirs: map[string]bool{}, files: map[string]bool{}, ignored: map[string]bool{}, embedded: map[string]bool{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir                                          string
			Standard                                     bool
			GoFiles, CgoFiles, TestGoFiles, XTestGoFiles []string
			IgnoredGoFiles                               []string
			EmbedFiles, TestEmbedFiles, XTestEmbedFiles  []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		rel, err := filepath.Rel(top, p.Dir)
		if p.Standard || err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			continue
		}
		dir := filepath.ToSlash(rel)
		sc.dirs[dir] = true
		join := func(names []string, into map[string]bool) {
			for _, n := range names {
				into[path.Join(dir, filepath.ToSlash(n))] = true
			}
		}
		join(p.GoFiles, sc.files)
		join(p.CgoFiles, sc.files)
		join(p.TestGoFiles, sc.files)
		join(p.XTestGoFiles, sc.files)
		join(p.IgnoredGoFiles, sc.ignored)
		join(p.EmbedFiles, sc.embedded)
		join(p.TestEmbedFiles, sc.embedded)
		join(p.XTestEmbedFiles, sc.embedded)
	}
	return sc, nil
}
