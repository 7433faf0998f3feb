package shard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// spec is a dry run's report of a spec at file:line in container text.
func spec(file string, line int, container, text string) types.SpecReport {
	return types.SpecReport{
		ContainerHierarchyTexts:     []string{container},
		ContainerHierarchyLocations: []types.CodeLocation{{FileName: "/src/suite/" + file, LineNumber: 1}},
		LeafNodeType:                types.NodeTypeIt,
		LeafNodeText:                text,
		LeafNodeLocation:            types.CodeLocation{FileName: "/src/suite/" + file, LineNumber: line},
		State:                       types.SpecStatePassed,
	}
}

func report(specs ...types.SpecReport) []types.Report {
	return []types.Report{{SuiteDescription: "suite", SpecReports: specs}}
}

// timed is a previous run in which each spec took the given time.
func timed(specs []types.SpecReport, took ...time.Duration) []types.Report {
	ran := slices.Clone(specs)
	for i := range ran {
		ran[i].RunTime = took[i]
	}
	return report(ran...)
}

func keys(s Shard) []string {
	var out []string
	for _, sp := range s.Specs {
		out = append(out, strings.TrimPrefix(sp.Key, "suite | "))
	}
	return out
}

func TestPackBalancesByRecordedTimes(t *testing.T) {
	specs := []types.SpecReport{
		spec("a_test.go", 10, "A", "slow"), spec("a_test.go", 20, "A", "mid"),
		spec("b_test.go", 10, "B", "quick1"), spec("b_test.go", 20, "B", "quick2"), spec("b_test.go", 30, "B", "quick3"),
	}
	shards, err := Pack(Specs(report(specs...)), Timings(timed(specs, 9*time.Second, 5*time.Second, 2*time.Second, 2*time.Second, time.Second)), 2)
	if err != nil {
		t.Fatal(err)
	}
	// Longest first, each to the shard with the least so far (the lower on
	// a tie): slow 9 → 1; mid 5 → 2; quick1 → 2 (7); quick2 → 2 (9);
	// quick3, at 9 against 9, → 1.
	if got := [][]string{keys(shards[0]), keys(shards[1])}; !slices.Equal(got[0], []string{"A slow", "B quick3"}) ||
		!slices.Equal(got[1], []string{"A mid", "B quick1", "B quick2"}) {
		t.Errorf("shards %v", got)
	}
	if shards[0].Estimate != 10*time.Second || shards[1].Estimate != 9*time.Second {
		t.Errorf("estimates %s and %s, want 10s and 9s", shards[0].Estimate, shards[1].Estimate)
	}
}

// The same inputs give the same shards, whatever order the timings come in.
func TestPackIsDeterministic(t *testing.T) {
	var specs []types.SpecReport
	var took []time.Duration
	for i := range 40 {
		specs = append(specs, spec(fmt.Sprintf("f%d_test.go", i%5), 10+i, "C", fmt.Sprintf("spec %d", i)))
		took = append(took, time.Duration(i%7)*time.Second) // many ties
	}
	first, err := Pack(Specs(report(specs...)), Timings(timed(specs, took...)), 3)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(specs)
	slices.Reverse(took)
	for range 20 {
		again, err := Pack(Specs(report(specs...)), Timings(timed(specs, took...)), 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range first {
			a, b := keys(first[i]), keys(again[i])
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("shard %d: %v, then %v", i+1, a, b)
			}
		}
	}
}

// A Serial or Ordered container's specs stay in one shard.
func TestPackKeepsSerialAndOrderedContainersWhole(t *testing.T) {
	ordered := []types.SpecReport{spec("o_test.go", 10, "O", "first"), spec("o_test.go", 20, "O", "second"), spec("o_test.go", 30, "O", "third")}
	for i := range ordered {
		ordered[i].IsInOrderedContainer = true
	}
	serial := spec("s_test.go", 10, "S", "alone")
	serial.IsSerial = true
	serial2 := spec("s_test.go", 20, "S", "alone too")
	serial2.IsSerial = true
	all := append(slices.Clone(ordered), serial, serial2, spec("p_test.go", 10, "P", "free"))
	shards, err := Pack(Specs(report(all...)), Timings(timed(all, 3*time.Second, 3*time.Second, 3*time.Second, 4*time.Second, 4*time.Second, time.Second)), 3)
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]int{}
	for _, s := range shards {
		for _, k := range keys(s) {
			where[k] = s.Index
		}
	}
	if where["O first"] != where["O second"] || where["O second"] != where["O third"] {
		t.Errorf("the Ordered container was split: %v", where)
	}
	if where["S alone"] != where["S alone too"] {
		t.Errorf("the Serial container was split: %v", where)
	}
}

// A spec the timings do not know counts the median and is placed once;
// without timings the split is by count; each spec is in one shard.
func TestPackPlacesUnknownSpecsAndSplitsByCountWithoutTimings(t *testing.T) {
	known := []types.SpecReport{spec("k_test.go", 10, "K", "a"), spec("k_test.go", 20, "K", "b"), spec("k_test.go", 30, "K", "c")}
	timings := Timings(timed(known, time.Second, 2*time.Second, 10*time.Second))
	all := append(slices.Clone(known), spec("n_test.go", 10, "N", "new"))
	shards, err := Pack(Specs(report(all...)), timings, 2)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range shards {
		for _, k := range keys(s) {
			count[k]++
		}
	}
	if len(count) != 4 || count["N new"] != 1 {
		t.Errorf("specs placed %v, want each of 4 once", count)
	}
	// c (10s) alone; a, b and new (the median, 2s) together: 5s.
	if shards[0].Estimate != 10*time.Second || shards[1].Estimate != 5*time.Second {
		t.Errorf("estimates %s, %s; want 10s and 5s (the new spec at the median)", shards[0].Estimate, shards[1].Estimate)
	}

	var many []types.SpecReport
	for i := range 10 {
		many = append(many, spec("m_test.go", 10+i, "M", fmt.Sprint(i)))
	}
	even, err := Pack(Specs(report(many...)), nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range even {
		if n := len(s.Specs); n < 3 || n > 4 {
			t.Errorf("shard %d holds %d of 10 specs without timings; want 3 or 4", s.Index, n)
		}
	}
	if _, err := Pack(nil, nil, 0); err == nil {
		t.Error("0 shards: no error")
	}
}

// Skipped and pending specs are not packed; specs at one line (a loop)
// stay together.
func TestSpecsLeaveOutWhatDoesNotRun(t *testing.T) {
	skipped := spec("a_test.go", 30, "A", "skipped")
	skipped.State = types.SpecStateSkipped
	specs := Specs(report(spec("a_test.go", 10, "A", "one"), spec("a_test.go", 10, "A", "two"), skipped, spec("sub/b_test.go", 5, "B", "b")))
	if len(specs) != 3 {
		t.Fatalf("specs %v, want the three that run", specs)
	}
	if specs[0].Group != specs[1].Group || specs[0].File != "a_test.go" || specs[2].File != "sub/b_test.go" {
		t.Errorf("specs %+v: want a_test.go:10 twice in one group and sub/b_test.go relative to the suite", specs)
	}
}

// The arguments name every file once with its specs' lines, anchored so
// that another file ending alike is not matched.
func TestGinkgoArgs(t *testing.T) {
	s := Shard{Specs: []Spec{{File: "e2e/vm_test.go", Line: 40}, {File: "e2e/a_test.go", Line: 7}, {File: "e2e/vm_test.go", Line: 12}, {File: "e2e/vm_test.go", Line: 12}}}
	want := []string{`--focus-file=(^|/)e2e/a_test\.go$:7`, `--focus-file=(^|/)e2e/vm_test\.go$:12,40`}
	if got := s.GinkgoArgs(); !slices.Equal(got, want) {
		t.Errorf("GinkgoArgs = %q, want %q", got, want)
	}
	var values []string
	for _, a := range want {
		values = append(values, strings.TrimPrefix(a, "--focus-file="))
	}
	filters, err := types.ParseFileFilters(values)
	if err != nil {
		t.Fatalf("Ginkgo does not parse %q: %v", want, err)
	}
	for _, c := range []struct {
		file string
		line int
		want bool
	}{{"/ci/repo/e2e/vm_test.go", 12, true}, {"/ci/repo/e2e/vm_test.go", 13, false}, {"/ci/repo/e2e/old_vm_test.go", 12, false}, {"/ci/repo/e2e/a_test.go", 7, true}} {
		if got := filters.Matches([]types.CodeLocation{{FileName: c.file, LineNumber: c.line}}); got != c.want {
			t.Errorf("%s:%d matched %v, want %v", c.file, c.line, got, c.want)
		}
	}
	if got := (Shard{}).GinkgoArgs(); !slices.Equal(got, []string{"--focus-file=^$"}) {
		t.Errorf("an empty shard's args %q", got)
	}
}

// hostileFiles are spec file names a dry run may report: legal on Linux,
// and each written to add a Ginkgo flag or a positional argument, or to
// end the file part of a --focus-file early, if a shell or Ginkgo split
// the arguments inside one.
var hostileFiles = []string{
	"x --output-dir=/tmp/pwn --toolexec=/bin/sh y.go",
	"my suite/a b_test.go",
	"c:12,13_test.go",
	"tab\t--dry-run\t_test.go",
	"nl\n--label-filter=none\n./other_test.go",
	"glob*?[ab]_test.go",
	`quote'"$(touch pwn)\_test.go`,
	"ünïcode_test.go",
	"bad\xff_test.go",
}

// Whatever the spec files are called, every argument is one --focus-file,
// the same words whether a shell splits `$(kubeharness shard …)` or reads
// the lines into an array, and Ginkgo's CLI, parsing the words, sets its
// focus files and nothing else: no --output-dir, --toolexec, --dry-run or
// --label-filter, no package. The focus runs each spec in the shard that
// holds it, at its line, and no other file's.
func TestGinkgoArgsSurviveHostileFileNames(t *testing.T) {
	var specs []types.SpecReport
	for i, f := range hostileFiles {
		specs = append(specs, spec(f, 10+i, "H", fmt.Sprint("hostile ", i)))
	}
	specs = append(specs, spec("plain_test.go", 5, "P", "plain"))
	shards, err := Pack(Specs(report(specs...)), nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	bash, _ := exec.LookPath("bash")
	if bash == "" {
		t.Log("no bash: the shell's splitting is modelled, not run")
	}
	for _, s := range shards {
		args := s.GinkgoArgs()
		for _, a := range args {
			value, ok := strings.CutPrefix(a, "--focus-file=")
			if !ok || strings.ContainsAny(value, " \t\n\r\v\f*?[]'\"`~<>;&!#") {
				t.Errorf("shard %d: argument %q is not one --focus-file of characters no shell splits, globs or quotes on", s.Index, a)
			}
		}
		printed := strings.Join(args, "\n") + "\n" // what kubeharness shard prints
		words := map[string][]string{"split on blanks": strings.Fields(printed)}
		if bash != "" {
			file := filepath.Join(t.TempDir(), "args")
			if err := os.WriteFile(file, []byte(printed), 0o600); err != nil {
				t.Fatal(err)
			}
			for how, script := range map[string]string{
				"bash: ginkgo $(kubeharness shard …)": `printf '%s\0' $(cat "$1")`,
				"bash: mapfile -t":                    `mapfile -t args <"$1"; printf '%s\0' "${args[@]}"`,
			} {
				cmd := exec.Command(bash, "-c", script, "bash", file)
				cmd.Dir = filepath.Dir(file)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				words[how] = strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			}
		}
		for how, w := range words {
			if !slices.Equal(w, args) {
				t.Errorf("shard %d, %s: words %q, want the arguments %q", s.Index, how, w, args)
			}
			// What the ginkgo CLI makes of the words.
			suite, reporter, cli, goFlags := types.NewDefaultSuiteConfig(), types.NewDefaultReporterConfig(), types.NewDefaultCLIConfig(), types.NewDefaultGoFlagsConfig()
			flags, err := types.BuildRunCommandFlagSet(&suite, &reporter, &cli, &goFlags)
			if err != nil {
				t.Fatal(err)
			}
			rest, err := flags.Parse(w)
			if err != nil {
				t.Errorf("shard %d, %s: ginkgo does not parse %q: %v", s.Index, how, w, err)
				continue
			}
			focus := suite.FocusFiles
			suite.FocusFiles = nil
			if len(rest) > 0 || !reflect.DeepEqual(suite, types.NewDefaultSuiteConfig()) || !reflect.DeepEqual(reporter, types.NewDefaultReporterConfig()) ||
				!reflect.DeepEqual(cli, types.NewDefaultCLIConfig()) || !reflect.DeepEqual(goFlags, types.NewDefaultGoFlagsConfig()) {
				t.Errorf("shard %d, %s: ginkgo reads more than focus files from %q: positionals %q, suite %+v, reporter %+v, cli %+v, go %+v",
					s.Index, how, w, rest, suite, reporter, cli, goFlags)
			}
			if len(focus) != len(args) {
				t.Errorf("shard %d, %s: focus files %q from %d arguments", s.Index, how, focus, len(args))
			}
			filters, err := types.ParseFileFilters(focus)
			if err != nil {
				t.Errorf("shard %d, %s: ginkgo does not parse the focus files %q: %v", s.Index, how, focus, err)
				continue
			}
			mine := map[string]bool{}
			for _, sp := range s.Specs {
				mine[sp.Key] = true
			}
			for _, sp := range specs {
				loc := sp.LeafNodeLocation
				// encoding/json writes a byte that is not UTF-8 as U+FFFD:
				// what a spec's file name is once through a JSON report.
				inJSON := types.CodeLocation{FileName: strings.ToValidUTF8(loc.FileName, "\uFFFD"), LineNumber: loc.LineNumber}
				for _, at := range []types.CodeLocation{loc, inJSON} {
					if got, want := filters.Matches([]types.CodeLocation{at}), mine["suite | "+sp.FullText()]; got != want {
						t.Errorf("shard %d, %s: %q:%d focused %v, want %v", s.Index, how, at.FileName, at.LineNumber, got, want)
					}
				}
				for _, other := range []types.CodeLocation{{FileName: loc.FileName, LineNumber: loc.LineNumber + 1}, {FileName: loc.FileName + ".orig", LineNumber: loc.LineNumber}, {FileName: "/src/suite/other_test.go", LineNumber: loc.LineNumber}} {
					if filters.Matches([]types.CodeLocation{other}) {
						t.Errorf("shard %d, %s: %q:%d focused; it is no spec's", s.Index, how, other.FileName, other.LineNumber)
					}
				}
			}
		}
	}
}

func TestParse(t *testing.T) {
	if k, n, err := Parse("2/3"); err != nil || k != 2 || n != 3 {
		t.Errorf("Parse(2/3) = %d, %d, %v", k, n, err)
	}
	for _, bad := range []string{"", "3", "0/3", "4/3", "a/b", "1/0"} {
		if _, _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "k/n") {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
}
