package coverage

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/shard"
)

// The suite's specs, by full text.
const (
	adds       = "Add adds"
	multiplies = "Add multiplies"
	scales     = "Scale scales small values"
	caps       = "Scale caps"
	notes      = "Scale reads the notes"
)

// everySpec is every spec, sorted.
var everySpec = []string{adds, multiplies, caps, notes, scales}

// selected are the full texts of the selected specs.
func selected(sel *Selection) []string {
	var out []string
	for _, s := range sel.Specs {
		_, text, _ := strings.Cut(s.Key, " | ")
		out = append(out, text)
	}
	slices.Sort(out)
	return out
}

func TestAffected(t *testing.T) {
	f := calcFixture(t)
	suite := []string{"./suite", "./worker"}
	tests := []struct {
		name string
		// change changes the clone; commit commits it (else it stays in
		// the working tree, as untracked or modified files).
		change func(t *testing.T, repo string)
		commit bool
		// packages are Options.Packages; nil: the suite's.
		packages []string
		want     []string // the full texts selected, sorted
		all      bool     // every spec, for a reason holding why
		why      string
	}{{
		name: "a changed line in a block selects the specs that reached it",
		change: func(t *testing.T, r string) {
			edit(t, r, "calc/calc.go", "\t\treturn Limit\n", "\t\treturn Limit - 1\n")
		},
		commit: true,
		want:   []string{caps},
	}, {
		name: "a changed condition selects the specs that reached its block",
		change: func(t *testing.T, r string) {
			edit(t, r, "calc/calc.go", "if x*step > Limit {", "if x*step >= Limit {")
		},
		want: []string{caps, scales},
	}, {
		name:   "a change in another function",
		change: func(t *testing.T, r string) { edit(t, r, "calc/calc.go", "return a + b", "return b + a") },
		commit: true,
		want:   []string{adds},
	}, {
		name: "a comment changes no spec",
		change: func(t *testing.T, r string) {
			edit(t, r, "calc/calc.go", "// Add adds.", "// Add adds two numbers.\n// It is commutative.")
		},
		want: nil,
	}, {
		name: "a new function changes no spec",
		change: func(t *testing.T, r string) {
			edit(t, r, "calc/calc.go", "// T is a type", "func unused() int {\n\treturn 7\n}\n\n// T is a type")
		},
		want: nil,
	}, {
		name: "a new method selects the specs that reached its package",
		change: func(t *testing.T, r string) {
			edit(t, r, "calc/other.go", "// Mul", "func (T) Other() string { return \"o\" }\n\n// Mul")
		},
		want: everySpec,
	}, {
		name:   "a constant other packages see selects every spec",
		change: func(t *testing.T, r string) { edit(t, r, "calc/calc.go", "const Limit = 100", "const Limit = 200") },
		commit: true,
		all:    true, why: "calc/calc.go:10 changed: a declaration other packages see (Limit)",
	}, {
		name:   "a constant of its package selects the specs that reached the package",
		change: func(t *testing.T, r string) { edit(t, r, "calc/calc.go", "const step = 2", "const step = 3") },
		want:   everySpec,
	}, {
		name:   "code reached outside any spec selects every spec",
		change: func(t *testing.T, r string) { edit(t, r, "calc/calc.go", "ready = true", "ready = !false") },
		all:    true, why: "reached outside any spec",
	}, {
		name:   "a spec file selects its specs",
		change: func(t *testing.T, r string) { edit(t, r, "suite/add_test.go", `ask("add 1 2")`, `ask("add 2 1")`) },
		commit: true,
		want:   []string{adds, multiplies},
	}, {
		name: "a test file without specs selects its suite's",
		change: func(t *testing.T, r string) {
			edit(t, r, "suite/helpers_test.go", "fmt.Sprint(got)", "fmt.Sprintf(\"%v\", got)")
		},
		want: everySpec,
	}, {
		name:   "configuration selects every spec",
		change: func(t *testing.T, r string) { write(t, r, "config/settings.yaml", "setting: 2\n") },
		commit: true,
		all:    true, why: "config/settings.yaml changed",
	}, {
		name: "go.mod selects every spec",
		change: func(t *testing.T, r string) {
			edit(t, r, "go.mod", "module example.com/calc\n", "module example.com/calc\n\n// a comment\n")
		},
		commit: true,
		all:    true, why: "go.mod changed",
	}, {
		name:   "test data selects every spec",
		change: func(t *testing.T, r string) { write(t, r, "suite/testdata/input.go", "package input\n") },
		all:    true, why: "suite/testdata/input.go changed",
	}, {
		name: "documentation changes no spec",
		change: func(t *testing.T, r string) {
			write(t, r, "README.md", "# calc\n\nMore words.\n")
			write(t, r, "docs/guide.txt", "A guide.\n")
		},
		commit: true,
		want:   nil,
	}, {
		name:   "an embedded file selects every spec, documentation or not",
		change: func(t *testing.T, r string) { write(t, r, "calc/notes.md", "Other notes.\n") },
		all:    true, why: "calc/notes.md changed: a file the suite's code embeds",
	}, {
		name:   "a file renamed in its package changes no spec",
		change: func(t *testing.T, r string) { gitIn(t, r, "mv", "calc/other.go", "calc/mul.go") },
		commit: true,
		want:   nil,
	}, {
		name: "a renamed file's changed lines are matched to its old lines",
		change: func(t *testing.T, r string) {
			gitIn(t, r, "mv", "calc/other.go", "calc/mul.go")
			edit(t, r, "calc/mul.go", "return a * b", "return b * a")
		},
		commit: true,
		want:   []string{multiplies},
	}, {
		name: "a file moved into another package changes every line",
		change: func(t *testing.T, r string) {
			write(t, r, "calc/other.go", "package calc\n\n// Mul multiplies.\nfunc Mul(a, b int) int { return mul.Mul(a, b) }\n")
			write(t, r, "calc/mul/mul.go", "package mul\n\n// Mul multiplies.\nfunc Mul(a, b int) int {\n\treturn a * b\n}\n")
		},
		commit: true,
		want:   []string{multiplies},
	}, {
		name:   "a deleted file selects the specs that reached it",
		change: func(t *testing.T, r string) { gitIn(t, r, "rm", "-q", "calc/other.go") },
		want:   []string{multiplies},
	}, {
		name:     "Go code no package of the suite is built from changes no spec",
		change:   func(t *testing.T, r string) { edit(t, r, "tools/tool.go", "return 1", "return 2") },
		packages: suite,
		want:     nil,
	}, {
		name:     "without packages, Go code coverage did not count selects every spec",
		change:   func(t *testing.T, r string) { edit(t, r, "tools/tool.go", "return 1", "return 2") },
		packages: []string{},
		all:      true, why: "tools/tool.go changed: Go code coverage did not count",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := f.clone(t)
			tc.change(t, repo)
			if tc.commit {
				if err := commitAll(repo, tc.name); err != nil {
					t.Fatal(err)
				}
			}
			pkgs := tc.packages
			if pkgs == nil {
				pkgs = suite
			}
			sel, err := Affected(context.Background(), Options{Repo: repo, Since: f.base, Record: f.record, DryRun: f.dryRun, Packages: pkgs})
			if err != nil {
				t.Fatal(err)
			}
			if sel.Total != len(everySpec) {
				t.Errorf("Total %d, want %d", sel.Total, len(everySpec))
			}
			if sel.All != tc.all {
				t.Fatalf("All %v (%q), want %v; selected %q, reasons %q", sel.All, sel.AllReasons, tc.all, selected(sel), sel.Reasons)
			}
			if tc.all {
				if !slices.ContainsFunc(sel.AllReasons, func(r string) bool { return strings.Contains(r, tc.why) }) {
					t.Errorf("reasons %q, want one holding %q", sel.AllReasons, tc.why)
				}
				if len(sel.Specs) != len(everySpec) {
					t.Errorf("selected %q, want every spec", selected(sel))
				}
				return
			}
			if diff := cmp.Diff(tc.want, selected(sel)); diff != "" {
				t.Errorf("selected (-want +got):\n%s\nreasons %q", diff, sel.Reasons)
			}
			for _, s := range sel.Specs {
				if len(sel.Reasons[s.Key]) == 0 {
					t.Errorf("%s selected without a reason", s.Key)
				}
			}
		})
	}
}

// A spec the record does not know is selected, and nothing else when
// nothing else changed; nothing at all gives Ginkgo a focus that matches
// no file.
func TestAffectedSpecsWithoutRecord(t *testing.T) {
	f := calcFixture(t)
	repo := f.clone(t)
	sel, err := Affected(context.Background(), Options{Repo: repo, Since: f.base, Record: f.record, DryRun: f.dryRun})
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Specs) != 0 || sel.All {
		t.Fatalf("selected %q (all: %v), want none", selected(sel), sel.AllReasons)
	}
	if diff := cmp.Diff([]string{"--focus-file=^$"}, sel.GinkgoArgs()); diff != "" {
		t.Errorf("GinkgoArgs (-want +got):\n%s", diff)
	}
	if got := sel.Summary(); !strings.Contains(got, "no spec (of 5)") {
		t.Errorf("Summary %q", got)
	}

	dry := slices.Clone(f.dryRun)
	dry[0].SpecReports = append(slices.Clone(dry[0].SpecReports), types.SpecReport{
		ContainerHierarchyTexts: []string{"New"},
		LeafNodeType:            types.NodeTypeIt,
		LeafNodeText:            "spec",
		LeafNodeLocation:        types.CodeLocation{FileName: filepath.Join(f.repo, "suite", "new_test.go"), LineNumber: 9},
		State:                   types.SpecStatePassed,
	})
	sel, err = Affected(context.Background(), Options{Repo: repo, Since: f.base, Record: f.record, DryRun: dry})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"New spec"}, selected(sel)); diff != "" {
		t.Fatalf("selected (-want +got):\n%s", diff)
	}
	if r := sel.Reasons[sel.Specs[0].Key]; len(r) != 1 || !strings.HasPrefix(r[0], "no record of it") {
		t.Errorf("reasons %q", r)
	}
	if diff := cmp.Diff([]string{`--focus-file=(^|/)new_test\.go$:9`}, sel.GinkgoArgs()); diff != "" {
		t.Errorf("GinkgoArgs (-want +got):\n%s", diff)
	}
}

// The selection is what shard.Pack splits, and its arguments are a shard's.
func TestAffectedComposesWithShard(t *testing.T) {
	f := calcFixture(t)
	repo := f.clone(t)
	edit(t, repo, "calc/calc.go", "const step = 2", "const step = 3")
	sel, err := Affected(context.Background(), Options{Repo: repo, Since: f.base, Record: f.record, DryRun: f.dryRun})
	if err != nil {
		t.Fatal(err)
	}
	shards, err := shard.Pack(sel.Specs, shard.Timings(f.dryRun), 2)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(shards[0].Specs) + len(shards[1].Specs); n != len(sel.Specs) {
		t.Errorf("the shards hold %d specs, want %d", n, len(sel.Specs))
	}
	want := shard.Shard{Specs: sel.Specs}.GinkgoArgs()
	if diff := cmp.Diff(want, sel.GinkgoArgs()); diff != "" {
		t.Errorf("GinkgoArgs (-want +got):\n%s", diff)
	}
	if !slices.Contains(sel.GinkgoArgs(), `--focus-file=(^|/)scale_test\.go$:8,11,14`) {
		t.Errorf("GinkgoArgs %q", sel.GinkgoArgs())
	}
}

// Without a dry run the specs are the record's, and that is said.
func TestAffectedWithoutDryRun(t *testing.T) {
	f := calcFixture(t)
	repo := f.clone(t)
	edit(t, repo, "calc/calc.go", "\t\treturn Limit\n", "\t\treturn Limit - 1\n")
	sel, err := Affected(context.Background(), Options{Repo: repo, Since: f.base, Record: f.record})
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Specs) != 1 || sel.Specs[0].Key != caps || sel.Specs[0].File != "suite/scale_test.go" {
		t.Errorf("selected %+v, want %q in suite/scale_test.go", sel.Specs, caps)
	}
	if len(sel.Notes) == 0 {
		t.Error("no note that the specs are the record's")
	}
}

func TestAffectedRefusesBadInputs(t *testing.T) {
	f := calcFixture(t)
	for _, o := range []Options{
		{Repo: f.repo, Record: f.record},
		{Repo: f.repo, Since: f.base},
		{Repo: f.repo, Since: "no-such-ref", Record: f.record},
		{Repo: f.repo, Since: f.base, Record: t.TempDir()},
	} {
		if _, err := Affected(context.Background(), o); err == nil {
			t.Errorf("Affected(%+v) gave no error", o)
		}
	}
}
