package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/bundle"
)

// Three shards of one suite, each of which reports the others' specs as
// skipped, merge into one run: every spec once, where it ran; the failure
// first, with the bundle from its own shard's directory; a timeline per
// shard; each shard's wall; and a spec no shard ran, once.
func TestMergeShowsEverySpecOnceAndEachShardsWall(t *testing.T) {
	all := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	ranIn := map[string]int{"a": 0, "bb": 1, "ccc": 2, "dddd": 2} // eeeee: skipped everywhere
	base := t.TempDir()
	var dirs []string
	for shard := range 3 {
		var specs []*specBuilder
		specs = append(specs, mkNode(types.NodeTypeSynchronizedBeforeSuite).at(1, 0, time.Second))
		for _, name := range all {
			b := mkSpec(name).state(types.SpecStateSkipped)
			if i, ok := ranIn[name]; ok && i == shard {
				b = mkSpec(name).at(2, 2*time.Second, time.Duration(shard+1)*time.Second)
				if name == "ccc" {
					b = b.failed("ccc broke")
				}
			}
			specs = append(specs, b)
		}
		dir := filepath.Join(base, "shard", string(rune('1'+shard)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r := mkSuite(t, 2, specs...)
		data, err := json.Marshal([]types.Report{r})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, JSONReportFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	// The failed spec's bundle, in its own shard's directory.
	bdir := bundle.Dir(dirs[2], "widgets ccc")
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bdir, "objects.yaml"), []byte("kind: Widget\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(base, "merged")
	w, err := Merge(dirs, RenderOptions{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	run := w.Run
	var specs []string
	for _, s := range run.Specs {
		if !s.IsSuiteNode() {
			specs = append(specs, s.Name)
		}
	}
	slices.Sort(specs)
	if want := []string{"widgets a", "widgets bb", "widgets ccc", "widgets dddd", "widgets eeeee"}; !slices.Equal(specs, want) {
		t.Errorf("specs %q, want each of %q once", specs, want)
	}
	if run.Counts.Passed != 3 || run.Counts.Failed != 1 || run.Counts.Skipped != 1 {
		t.Errorf("counts %+v, want 3 passed, 1 failed, 1 skipped", run.Counts)
	}
	if len(run.Failures) != 1 || run.Failures[0].Name != "widgets ccc" || run.Failures[0].Bundle == nil {
		t.Fatalf("failures %v; want ccc with its bundle from shard 3", names(run.Failures))
	}
	if len(run.Shards) != 3 || run.Shards[2].Failed != 1 || run.Shards[2].Ran != 2 || run.Shards[0].Ran != 1 {
		t.Errorf("shards %+v; want 3, the third with 2 ran and 1 failed", run.Shards)
	}
	// Shard i's spec ends at 3+i s; its suite a second later.
	for i, sh := range run.Shards {
		if want := time.Duration(4+i) * time.Second; sh.Wall != want {
			t.Errorf("%s: wall %s, want %s", sh.Name, sh.Wall, want)
		}
	}
	if len(run.Timelines) != 3 || !strings.HasSuffix(run.Timelines[1].Suite, "shard 2 of 3") {
		t.Errorf("timelines %d, the second named %q; want one per shard, named for it", len(run.Timelines), run.Timelines[1].Suite)
	}
	if !slices.Equal(run.Suites, []string{"widgets e2e"}) {
		t.Errorf("suites %q, want the one suite once", run.Suites)
	}
	page, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	failures, passed := strings.Index(html, `id="failures"`), strings.Index(html, "widgets a")
	if failures < 0 || passed < 0 || failures > passed {
		t.Errorf("the page does not show the failures first (failures at %d, a passed spec at %d)", failures, passed)
	}
	if !strings.Contains(html, "shard 3 of 3") || !strings.Contains(html, "1 failed") {
		t.Error("the page names no shard walls")
	}

	if _, err := Merge(nil, RenderOptions{OutDir: out}); err == nil {
		t.Error("merging nothing: no error")
	}
	if _, err := Merge(dirs, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "OutDir") {
		t.Errorf("merging without an out directory: %v", err)
	}
}
