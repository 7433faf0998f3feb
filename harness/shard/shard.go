package shard

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onsi/ginkgo/v2/types"
)

// Spec is one spec a suite would run, as a dry run reports it.
type Spec struct {
	// Key names the spec across runs: its suite's description and its
	// full text.
	Key string
	// File and Line are where its leaf node (It, Entry) is, File relative
	// to the directory that holds every spec file of the dry run.
	File string
	Line int
	// Group is what must run in one shard with it: its location, or for a
	// spec in a Serial or Ordered container, its top-level container's.
	Group string
}

// Specs are the specs the reports (of a `ginkgo --dry-run --json-report`)
// would run, in report order; skipped and pending specs are left out.
func Specs(reports []types.Report) []Spec {
	var files []string
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if runs(s) {
				files = append(files, s.LeafNodeLocation.FileName)
			}
		}
	}
	base := commonDir(files)
	rel := func(file string) string {
		if base == "" {
			return file
		}
		if r, err := filepath.Rel(base, file); err == nil {
			return filepath.ToSlash(r)
		}
		return file
	}
	var out []Spec
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if !runs(s) {
				continue
			}
			sp := Spec{Key: key(r, s), File: rel(s.LeafNodeLocation.FileName), Line: s.LeafNodeLocation.LineNumber}
			sp.Group = sp.File + ":" + strconv.Itoa(sp.Line)
			if (s.IsSerial || s.IsInOrderedContainer) && len(s.ContainerHierarchyLocations) > 0 {
				top := s.ContainerHierarchyLocations[0]
				sp.Group = rel(top.FileName) + ":" + strconv.Itoa(top.LineNumber) + " (serial or ordered)"
			}
			out = append(out, sp)
		}
	}
	return out
}

// Timings are the run times of the specs a previous run's reports hold,
// by Spec.Key: of the specs that ran (passed or failed), not of those
// skipped.
func Timings(reports []types.Report) map[string]time.Duration {
	t := map[string]time.Duration{}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType == types.NodeTypeIt && s.State.Is(types.SpecStatePassed|types.SpecStateFailed) {
				t[key(r, s)] += s.RunTime
			}
		}
	}
	return t
}

func runs(s types.SpecReport) bool {
	return s.LeafNodeType == types.NodeTypeIt && !s.State.Is(types.SpecStateSkipped|types.SpecStatePending)
}

func key(r types.Report, s types.SpecReport) string {
	return r.SuiteDescription + " | " + s.FullText()
}

// commonDir is the deepest directory that holds every file.
func commonDir(files []string) string {
	if len(files) == 0 {
		return ""
	}
	dir := filepath.Dir(files[0])
	for _, f := range files[1:] {
		for dir != "/" && dir != "." && !strings.HasPrefix(f, dir+string(filepath.Separator)) {
			dir = filepath.Dir(dir)
		}
	}
	return dir
}

// Shard is the specs one of n machines runs.
type Shard struct {
	// Index is the shard's number, from 1.
	Index int
	// Specs are the shard's specs, in the order the dry run listed them.
	Specs []Spec
	// Estimate is the sum of their recorded (or estimated) run times.
	Estimate time.Duration
}

// Pack assigns specs to n shards so that the slowest shard is as short as
// the greedy longest-processing-time rule makes it: groups (a spec, or a
// Serial or Ordered container's specs) are placed from the longest down,
// each on the shard with the least time so far, the lower index on a tie.
// A spec's time is its recorded one in timings; one without (new since
// the timings were recorded) counts the median of the recorded times, and
// without any recorded times every spec counts the same, which splits by
// count. The same specs and timings give the same shards on every machine.
func Pack(specs []Spec, timings map[string]time.Duration, n int) ([]Shard, error) {
	if n < 1 {
		return nil, fmt.Errorf("shards: %d; want 1 or more", n)
	}
	unknown := median(specs, timings)
	type group struct {
		name     string
		specs    []Spec
		estimate time.Duration
	}
	var groups []*group
	byName := map[string]*group{}
	for _, s := range specs {
		g := byName[s.Group]
		if g == nil {
			g = &group{name: s.Group}
			byName[s.Group] = g
			groups = append(groups, g)
		}
		g.specs = append(g.specs, s)
		if d, ok := timings[s.Key]; ok {
			g.estimate += d
		} else {
			g.estimate += unknown
		}
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		if c := cmp.Compare(b.estimate, a.estimate); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	shards := make([]Shard, n)
	for i := range shards {
		shards[i].Index = i + 1
	}
	placed := map[string]int{}
	for _, g := range groups {
		least := 0
		for i := range shards {
			if shards[i].Estimate < shards[least].Estimate {
				least = i
			}
		}
		shards[least].Estimate += g.estimate
		for _, s := range g.specs {
			placed[s.Key+"\x00"+s.Group] = least
		}
	}
	// Each shard lists its specs in the dry run's order.
	for _, s := range specs {
		i := placed[s.Key+"\x00"+s.Group]
		shards[i].Specs = append(shards[i].Specs, s)
	}
	return shards, nil
}

// median is the median recorded time of specs that have one; a second
// when none has, so that every spec counts the same.
func median(specs []Spec, timings map[string]time.Duration) time.Duration {
	var known []time.Duration
	for _, s := range specs {
		if d, ok := timings[s.Key]; ok {
			known = append(known, d)
		}
	}
	if len(known) == 0 {
		return time.Second
	}
	slices.Sort(known)
	return known[len(known)/2]
}

// GinkgoArgs are the arguments that make Ginkgo run exactly the shard's
// specs: one --focus-file per file, naming the lines of the shard's specs
// there. Ginkgo runs a spec when any of its nodes is at a line named, and
// a line where one spec's It or Entry is holds no other spec's node, so
// every spec runs in exactly one shard. A shard without specs gets a focus
// that matches no file.
//
// Every argument is "--focus-file=" followed by ASCII letters, digits and
// "/_-.\^$|(){},:" only, whatever the spec files are called: a file name's
// other characters are written as regular-expression escapes (see
// fileRegexp). So an argument is never a positional one, a shell that
// splits `ginkgo $(kubeharness shard …)` into words splits nowhere inside
// one and globs none, and a name with a blank, a ':' or a ',' cannot end
// the file part of Ginkgo's file:lines early or add a flag of its own.
func (s Shard) GinkgoArgs() []string {
	if len(s.Specs) == 0 {
		return []string{"--focus-file=^$"}
	}
	lines := map[string][]int{}
	var files []string
	for _, sp := range s.Specs {
		if _, ok := lines[sp.File]; !ok {
			files = append(files, sp.File)
		}
		if !slices.Contains(lines[sp.File], sp.Line) {
			lines[sp.File] = append(lines[sp.File], sp.Line)
		}
	}
	slices.Sort(files)
	args := make([]string, 0, len(files))
	for _, f := range files {
		ls := lines[f]
		slices.Sort(ls)
		nums := make([]string, len(ls))
		for i, l := range ls {
			nums[i] = strconv.Itoa(l)
		}
		// The file is a regular expression Ginkgo matches anywhere in the
		// spec's absolute path: anchored to a path element and the end.
		args = append(args, "--focus-file=(^|/)"+fileRegexp(f)+"$:"+strings.Join(nums, ","))
	}
	return args
}

// fileRegexp is a regular expression that matches exactly the text name,
// written in ASCII letters, digits, '/', '_', '-' and backslash escapes
// only. Ginkgo cuts a --focus-file at every ':' (file:lines) and its lines
// at every ','; a shell splits words at blanks, tabs and newlines and
// globs on '*', '?' and '['; so every other character is escaped by its
// code point: \x20 for a blank, \x3a for ':', \x{fc} for 'ü' (no shell
// expands the braces of a word a substitution made), and '.' as \. (what
// regexp.QuoteMeta writes, and kubeharness shard always printed). A byte
// that is not UTF-8 is \x{fffd}: Go's regexp reads it as U+FFFD, which is
// also what a JSON report holds in its place.
func fileRegexp(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '/', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.':
			b.WriteString(`\.`)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\x{%x}`, r)
		}
	}
	return b.String()
}

// Parse reads "k/n" (shard k of n, k from 1).
func Parse(s string) (k, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		k, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("shard %q: want k/n with 1 <= k <= n, such as 2/3", s)
	}
	return k, n, nil
}
