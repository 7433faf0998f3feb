package coverage

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProfile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string][]Block
		wantErr string
	}{{
		name: "blocks sorted, the same block's counts added",
		in: "mode: atomic\n" +
			"example.com/m/a.go:10.2,12.3 2 0\n" +
			"example.com/m/a.go:3.20,5.2 1 4\n" +
			"example.com/m/a.go:10.2,12.3 2 3\n" +
			"example.com/m/dir:with:colons/b.go:1.1,1.9 1 1\n",
		want: map[string][]Block{
			"example.com/m/a.go":                 {{3, 20, 5, 2, 1, 4}, {10, 2, 12, 3, 2, 3}},
			"example.com/m/dir:with:colons/b.go": {{1, 1, 1, 9, 1, 1}},
		},
	}, {
		name:    "no mode line",
		in:      "example.com/m/a.go:3.20,5.2 1 4\n",
		wantErr: "want \"mode: set|count|atomic\"",
	}, {
		name:    "empty",
		in:      "",
		wantErr: "empty",
	}, {
		name:    "a block ending before it starts",
		in:      "mode: set\nexample.com/m/a.go:5.1,3.2 1 1\n",
		wantErr: "line 2",
	}, {
		name:    "a field missing",
		in:      "mode: set\nexample.com/m/a.go:3.1,5.2 1\n",
		wantErr: "line 2",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProfile(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one holding %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.Blocks); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHunks(t *testing.T) {
	patch := "diff --git a/r.go b/s.go\n" +
		"similarity index 79%\n" +
		"rename from r.go\n" +
		"rename to s.go\n" +
		"--- a/r.go\n" +
		"+++ b/s.go\n" +
		"@@ -5 +5 @@\n-5\n+five\n" +
		"diff --git a/x y.go b/x y.go\n" +
		"--- a/x y.go\t\n" +
		"+++ b/x y.go\t\n" +
		"@@ -2 +2 @@ a\n-b\n+B\n" +
		"@@ -3,0 +4,2 @@ c\n+d\n+e\n" +
		"diff --git \"a/t\\tab.go\" \"b/t\\tab.go\"\n" +
		"--- \"a/t\\tab.go\"\n" +
		"+++ /dev/null\n" +
		"@@ -1,3 +0,0 @@\n-x\n-y\n-z\n"
	got, err := parseHunks([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]hunk{
		"r.go\x00s.go":     {{5, 1, 5, 1}},
		"x y.go\x00x y.go": {{2, 1, 2, 1}, {3, 0, 4, 2}},
		"t\tab.go\x00":     {{1, 3, 0, 0}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hunks (-want +got):\n%s", diff)
	}
}

func TestParseGo(t *testing.T) {
	src := `// Package p is p.
package p

import (
	"fmt"
	_ "embed"
)

/* a block
   comment */
const Exported, unexported = 1, 2

var _ = fmt.Sprint()

type t struct {
	// a field
	f int
}

func init() {}

func (x *t) M() string {
	s := ` + "`a\nraw`" + `
	return s
}

func F[T any]() {}
`
	g, err := parseGo([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var code []int
	for l := 1; l <= g.lines; l++ {
		if g.code[l] {
			code = append(code, l)
		}
	}
	if diff := cmp.Diff([]int{2, 4, 5, 6, 7, 11, 13, 15, 17, 18, 20, 22, 23, 24, 25, 26, 28}, code); diff != "" {
		t.Errorf("lines of code (-want +got):\n%s", diff)
	}
	type got struct {
		Kind        declKind
		Name        string
		Method      bool
		SideEffects bool
		Exported    bool
	}
	at := func(l int) got {
		d := g.declAt(l)
		if d == nil {
			return got{Kind: -1}
		}
		return got{d.kind, d.name, d.method, d.sideEffects, d.exported()}
	}
	for l, want := range map[int]got{
		2:  {Kind: -1},
		6:  {Kind: declImport, SideEffects: true},
		11: {Kind: declOther, Name: "Exported, unexported", Exported: true},
		13: {Kind: declOther, Name: "_", SideEffects: true},
		17: {Kind: declOther, Name: "t"},
		20: {Kind: declFunc, Name: "init", SideEffects: true},
		24: {Kind: declFunc, Name: "t.M", Method: true},
		28: {Kind: declFunc, Name: "F"},
	} {
		if diff := cmp.Diff(want, at(l)); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", l, diff)
		}
	}
	if g.funcNamed("t.M") == nil || g.funcNamed("M") != nil || !g.declares("unexported") {
		t.Error("funcNamed or declares")
	}
}

func TestIgnored(t *testing.T) {
	s := &selector{opts: Options{Ignore: DefaultIgnore}}
	for p, want := range map[string]bool{
		"README.md": true, "sub/notes.md": true, "docs/x.yaml": true, "LICENSE": true, ".github/workflows/ci.yaml": true,
		"config/crd/x.yaml": false, "Makefile": false, "go.mod": false, "main.go": false, "sub/docs/x.yaml": false,
	} {
		if got := s.ignored(p); got != want {
			t.Errorf("ignored(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestProfileAdd: two shards' profiles add up block by block, a block
// only one has is kept, and profiles of different modes refuse to add.
func TestProfileAdd(t *testing.T) {
	parse := func(text string) *Profile {
		t.Helper()
		p, err := ParseProfile(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := parse("mode: atomic\nx/a.go:1.1,2.2 1 0\nx/a.go:3.1,4.2 2 5\n")
	b := parse("mode: atomic\nx/a.go:1.1,2.2 1 3\nx/b.go:1.1,1.9 1 1\n")
	if err := a.Add(b); err != nil {
		t.Fatal(err)
	}
	want := map[string][]Block{
		"x/a.go": {{StartLine: 1, StartCol: 1, EndLine: 2, EndCol: 2, NumStmt: 1, Count: 3}, {StartLine: 3, StartCol: 1, EndLine: 4, EndCol: 2, NumStmt: 2, Count: 5}},
		"x/b.go": {{StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 9, NumStmt: 1, Count: 1}},
	}
	if diff := cmp.Diff(want, a.Blocks); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if len(b.Blocks["x/a.go"]) != 1 || b.Blocks["x/a.go"][0].Count != 3 {
		t.Errorf("Add changed the profile it added: %v", b.Blocks)
	}
	if err := a.Add(parse("mode: set\nx/a.go:1.1,2.2 1 1\n")); err == nil || !strings.Contains(err.Error(), "do not add up") {
		t.Errorf("adding a set profile to an atomic one: %v, want a refusal", err)
	}
}
