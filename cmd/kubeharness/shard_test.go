package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// Every spec of the dry run is in exactly one shard's arguments, and a
// shard's summary names its estimate.
func TestShardPrintsEachShardsArguments(t *testing.T) {
	dir := t.TempDir()
	var specs []types.SpecReport
	for i := range 6 {
		specs = append(specs, types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: fmt.Sprint("spec ", i), State: types.SpecStatePassed,
			LeafNodeLocation: types.CodeLocation{FileName: "/src/suite/a_test.go", LineNumber: 10 + i},
			RunTime:          time.Duration(i+1) * time.Second,
		})
	}
	write := func(name string, v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	report := []types.Report{{SuiteDescription: "suite", SpecReports: specs}}
	dry, timings := write("dry.json", report), write("last.json", report)
	lines := map[string]int{}
	for k := 1; k <= 2; k++ {
		out, errOut, code := kubeharness(t, "shard", "--dry-run", dry, "--timings", timings, "--shard", fmt.Sprintf("%d/2", k))
		if code != 0 {
			t.Fatalf("shard %d/2: exit %d: %s", k, code, errOut)
		}
		// 1 s to 6 s, longest first: 6 → 1, 5 → 2, 4 → 2, 3 → 1, 2 → 1, 1 → 2.
		want := map[int]string{1: "shard 1/2: 3 of 6 specs, estimate 11s (slowest shard 11s, mean 10.5s)", 2: "shard 2/2: 3 of 6 specs, estimate 10s (slowest shard 11s, mean 10.5s)"}[k]
		if strings.TrimSpace(errOut) != want {
			t.Errorf("shard %d/2 summary %q, want %q", k, errOut, want)
		}
		arg := strings.TrimSpace(out)
		_, nums, ok := strings.Cut(arg, `a_test\.go$:`)
		if !ok || strings.Count(out, "\n") != 1 {
			t.Fatalf("shard %d/2 printed %q; want one --focus-file for a_test.go", k, out)
		}
		for _, n := range strings.Split(nums, ",") {
			lines[n]++
		}
	}
	if len(lines) != 6 {
		t.Errorf("lines over both shards %v; want each of 6 once", lines)
	}
	for l, n := range lines {
		if n != 1 {
			t.Errorf("line %s in %d shards", l, n)
		}
	}
}

// Whatever the dry run's spec files are called, kubeharness shard prints
// one --focus-file a line, and a shell splitting its output into words
// gets those lines back: a file name with blanks or newlines cannot give
// ginkgo $(kubeharness shard …) a flag such as --output-dir or --toolexec.
func TestShardArgumentsAreWholeWordsWhateverTheFilesAreCalled(t *testing.T) {
	files := []string{"x --output-dir=/tmp/pwn --toolexec=/bin/sh y.go", "my suite/a b_test.go", "nl\n--dry-run\n_test.go", "c:1,2_test.go", "plain_test.go"}
	var specs []types.SpecReport
	for i, f := range files {
		specs = append(specs, types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: fmt.Sprint("spec ", i), State: types.SpecStatePassed,
			LeafNodeLocation: types.CodeLocation{FileName: "/src/my suite/" + f, LineNumber: 10 + i},
		})
	}
	data, err := json.Marshal([]types.Report{{SuiteDescription: "suite", SpecReports: specs}})
	if err != nil {
		t.Fatal(err)
	}
	dry := filepath.Join(t.TempDir(), "dry.json")
	if err := os.WriteFile(dry, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := kubeharness(t, "shard", "--dry-run", dry, "--shard", "1/1")
	if code != 0 {
		t.Fatalf("shard 1/1: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(files) {
		t.Errorf("printed %q: want one line for each of the %d files", out, len(files))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "--focus-file=") {
			t.Errorf("printed %q: the argument %q is not a --focus-file", out, l)
		}
	}
	if words := strings.Fields(out); !slices.Equal(words, lines) {
		t.Errorf("printed %q: split into words %q, not the lines %q", out, words, lines)
	}
}

// TestMakeE2EShardPassesEachArgumentWhole runs `make e2e SHARD=1/1` with a
// recorded `go tool ginkgo` whose dry run lists spec files named to smuggle
// flags in: the suite's ginkgo gets each of kubeharness shard's lines as
// one argument, and none of the smuggled flags.
func TestMakeE2EShardPassesEachArgumentWhole(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	var specs []types.SpecReport
	for i, f := range []string{"x --output-dir=/tmp/pwn --toolexec=/bin/sh y.go", "nl\n--dry-run\n_test.go", "a b:1,2_test.go"} {
		specs = append(specs, types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: fmt.Sprint("spec ", i), State: types.SpecStatePassed,
			LeafNodeLocation: types.CodeLocation{FileName: filepath.Join(root, "e2e", f), LineNumber: 10 + i},
		})
	}
	data, err := json.Marshal([]types.Report{{SuiteDescription: "suite", SpecReports: specs}})
	if err != nil {
		t.Fatal(err)
	}
	dry := filepath.Join(tmp, "dry.json")
	if err := os.WriteFile(dry, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want, errOut, code := kubeharness(t, "shard", "--dry-run", dry, "--shard", "1/1")
	if code != 0 {
		t.Fatalf("shard 1/1: exit %d: %s", code, errOut)
	}

	artifacts := filepath.Join(tmp, "artifacts")
	args := filepath.Join(tmp, "ginkgo-args")
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The recipe's dry run (the one whose report is shard-dry-run.json)
	// leaves the report above; the run records its arguments.
	writeScript(t, filepath.Join(bin, "go"), `if [ "$1 $2" = "tool ginkgo" ]; then
  for a; do [ "$a" != --json-report=shard-dry-run.json ] || { cp "`+dry+`" "$ARTIFACTS/shard-dry-run.json"; exit 0; }; done
  printf '%s\n' "$@" >"`+args+`"; exit 1
fi
exec "`+realGo+`" "$@"`)
	kh := filepath.Join(tmp, "kubeharness")
	writeScript(t, kh, asKubeharness+`=1 exec "`+self+`" "$@"`)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOPROXY=off")
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "-o", "kubeharness", "-o", "manager", "-o", "vm-controller",
		"KUBEHARNESS="+kh, "PROVIDER=existing", "ARTIFACTS="+artifacts, "SHARD=1/1", "SHARD_TIMINGS=", "e2e")
	cmd.Env = env
	out, _ := cmd.CombinedOutput() // the recorded suite fails; its arguments are what counts
	got, err := os.ReadFile(args)
	if err != nil {
		t.Fatalf("make e2e SHARD=1/1 ran no suite (%v):\n%s", err, out)
	}
	var focus []string
	for _, a := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
		switch {
		case strings.HasPrefix(a, "--focus-file="):
			focus = append(focus, a)
		case a == "--dry-run" || strings.HasPrefix(a, "--output-dir=/tmp/pwn") || strings.HasPrefix(a, "--toolexec") || !strings.HasPrefix(a, "-") && a != "tool" && a != "ginkgo" && a != "./e2e":
			t.Errorf("ginkgo got the argument %q, which no spec file name should give it:\n%s", a, got)
		}
	}
	if w := strings.Split(strings.TrimSuffix(want, "\n"), "\n"); !slices.Equal(focus, w) {
		t.Errorf("ginkgo got the focus files %q; kubeharness shard printed %q", focus, w)
	}
}
