package report

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// coveredRun is a copy of runs/one with the coverage fixture in it.
func coveredRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, src := range []string{runOne, coverageFixture} {
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCoverageSection(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("reading the per-spec record needs go tool covdata: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Load(coveredRun(t), RenderOptions{SourceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	cov := run.Coverage
	if cov == nil {
		t.Fatal("no coverage section for a run directory with coverage/ and spec-coverage/")
	}
	if len(cov.Notes) > 0 {
		t.Errorf("notes: %q", cov.Notes)
	}
	if len(cov.Packages) != 1 || cov.Packages[0].Path != covsrcModule || cov.Packages[0].Covered == 0 ||
		cov.Packages[0].Covered >= cov.Packages[0].Statements {
		t.Errorf("packages: %+v, want %s partly covered", cov.Packages, covsrcModule)
	}

	const file = "harness/report/testdata/covsrc/widgets.go"
	if len(cov.Unreached) != 1 || cov.Unreached[0].File != file {
		t.Fatalf("unreached: %+v, want %s", cov.Unreached, file)
	}
	var text strings.Builder
	for _, r := range cov.Unreached[0].Ranges {
		for _, l := range r.Lines {
			text.WriteString(l.Text + "\n")
		}
	}
	for _, want := range []string{`fmt.Println("refusing to resize", name, "to nothing")`, `fmt.Fprintln(os.Stderr, "usage: widgets create|reject|settle|list|rotate")`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the unreached lines do not show %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), `fmt.Println("rotated the CA")`) {
		t.Errorf("the unreached lines show a line a spec reached:\n%s", text.String())
	}

	got := map[string][]string{}
	for _, s := range cov.Specs {
		if s.Href == "" {
			t.Errorf("spec %q links to no spec of the run", s.Name)
		}
		got[s.Name] = s.Files
	}
	want := map[string][]string{}
	for _, name := range []string{"creates a widget", "rejects a <b>huge</b> widget & says why", "settles a widget eventually",
		"lists widgets across namespaces", "rotates the widgets' CA"} {
		want["widgets "+name] = []string{file}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the files each spec reached (-want +got):\n%s", diff)
	}

	var md bytes.Buffer
	if err := run.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "coverage " + cov.Percent() + " of "; !strings.Contains(md.String(), want) {
		t.Errorf("the Markdown summary does not say %q:\n%s", want, md.String())
	}

	var page bytes.Buffer
	if err := run.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="coverage"`, covsrcModule, "refusing to resize", "widgets rejects a &lt;b&gt;huge&lt;/b&gt; widget &amp; says why"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}

// A profile is the run's data: it may name any file, and the section shows
// lines only of files a failure's source lines could come from.
func TestCoverageShowsOnlyWhatSourcesMay(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(runOne)); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, filepath.FromSlash(CoverageProfileFile))
	if err := os.MkdirAll(filepath.Dir(profile), 0o755); err != nil {
		t.Fatal(err)
	}
	const body = "mode: set\n" +
		"github.com/kubeharness/kubeharness/go.mod:1.1,3.1 1 0\n" +
		"github.com/kubeharness/kubeharness/.git/config.go:1.1,3.1 1 0\n" +
		"example.com/elsewhere/x.go:1.1,3.1 1 0\n"
	if err := os.WriteFile(profile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir, RenderOptions{SourceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if run.Coverage == nil {
		t.Fatal("no coverage section")
	}
	for _, f := range run.Coverage.Unreached {
		for _, r := range f.Ranges {
			if len(r.Lines) > 0 {
				t.Errorf("%s: lines shown: %+v", f.File, r.Lines)
			}
		}
		if f.Note == "" {
			t.Errorf("%s: no note says why its lines are not shown", f.File)
		}
	}
	if len(run.Coverage.Unreached) != 3 {
		t.Errorf("unreached: %+v, want the three files listed without lines", run.Coverage.Unreached)
	}
}

// TestMergeAddsTheShardsCoverage: report merge shows the coverage of a run
// split across shards: the shards' per-spec records together (each spec
// once, as the shard that ran it recorded it), their profiles added up, so
// that the section reads as the whole run's.
func TestMergeAddsTheShardsCoverage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("reading the per-spec record needs go tool covdata: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Load(coveredRun(t), RenderOptions{SourceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	// Two shards, each with the run's profile and half of its record.
	shards := []string{coveredRun(t), coveredRun(t)}
	specDirs, err := os.ReadDir(filepath.Join(shards[0], SpecCoverageDir, "specs"))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range specDirs {
		if err := os.RemoveAll(filepath.Join(shards[i%2], SpecCoverageDir, "specs", d.Name())); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Merge(shards, RenderOptions{SourceRoot: root, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cov := w.Run.Coverage
	if cov == nil {
		t.Fatal("the merged page has no coverage section")
	}
	if len(cov.Notes) > 0 {
		t.Errorf("notes: %q", cov.Notes)
	}
	if len(cov.Specs) != len(whole.Coverage.Specs) {
		t.Errorf("the merged section lists %d specs, want the %d of the shards' records together", len(cov.Specs), len(whole.Coverage.Specs))
	}
	if diff := cmp.Diff(whole.Coverage.Packages, cov.Packages); diff != "" {
		t.Errorf("the merged packages are not the run's (-run +merged):\n%s", diff)
	}

	// A shard whose binaries were built in another mode is left out, and
	// the section says so.
	profile := filepath.Join(shards[1], CoverageProfileFile)
	data, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), "\n")
	if err := os.WriteFile(profile, []byte("mode: set\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err = Merge(shards, RenderOptions{SourceRoot: root, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(w.Run.Coverage.Notes, "\n"); !strings.Contains(notes, "do not add up") {
		t.Errorf("notes %q do not say the set-mode shard was left out", notes)
	}
}
