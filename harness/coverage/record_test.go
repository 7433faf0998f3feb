package coverage

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kubeharness/kubeharness/harness/coverage/flush"
)

// capBlock is the block of calc.Scale that returns Limit.
func capBlock(t *testing.T, p *Profile) Block {
	t.Helper()
	for _, b := range p.Blocks["example.com/calc/calc/calc.go"] {
		if b.StartLine == 35 {
			return b
		}
	}
	t.Fatalf("no block of calc.go starts at line 35 (return Limit): %v", p.Blocks["example.com/calc/calc/calc.go"])
	return Block{}
}

// The record holds a directory per spec with what the worker ran during
// it, and what it ran at start outside every spec.
func TestLoadRecord(t *testing.T) {
	f := calcFixture(t)
	rec, err := Load(context.Background(), f.record)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range rec.Specs {
		texts = append(texts, s.Text)
		if s.Profile == nil || s.Incomplete != "" || !s.Processes || s.RepoFile == "" || s.Commit != f.base {
			t.Errorf("%s: record %+v", s.Text, s.SpecInfo)
		}
		if s.ID != SpecID(s.RepoFile, s.Line, s.Text) {
			t.Errorf("%s: directory %s, want %s", s.Text, s.ID, SpecID(s.RepoFile, s.Line, s.Text))
		}
	}
	slices.Sort(texts)
	if !slices.Equal(texts, everySpec) {
		t.Fatalf("specs %q, want %q", texts, everySpec)
	}
	cb := capBlock(t, rec.Instrumented)
	for _, s := range rec.Specs {
		if got, want := s.Reached("example.com/calc/calc/calc.go", cb), s.Text == caps; got != want {
			t.Errorf("%s reached the cap block: %v, want %v", s.Text, got, want)
		}
	}
	if rec.Outside == nil {
		t.Fatal("nothing outside every spec; the worker's start should be")
	}
	var init Block
	for _, b := range rec.Instrumented.Blocks["example.com/calc/calc/calc.go"] {
		if b.StartLine == 24 { // Init's body
			init = b
		}
	}
	if !reached(rec.Outside, "example.com/calc/calc/calc.go", init) {
		t.Errorf("calc.Init, which the worker runs at start, is not reached outside every spec")
	}
}

// A process flushes on request into the directory named, clears its
// counters, and at stop leaves no registration behind; a registration
// whose process is gone is passed over and removed.
func TestFlushOnRequest(t *testing.T) {
	f := calcFixture(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "flush-999999999.addr")
	if err := os.WriteFile(stale, []byte(filepath.Join(dir, "gone.sock")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(f.bin, "worker"))
	cmd.Env = append(os.Environ(), EnvCoverDir+"="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewScanner(outPipe)
	ask := func(req string) string {
		t.Helper()
		if _, err := in.Write([]byte(req + "\n")); err != nil {
			t.Fatal(err)
		}
		if !out.Scan() {
			t.Fatalf("the worker did not answer %q", req)
		}
		return out.Text()
	}
	if !out.Scan() || out.Text() != "ready" {
		t.Fatal("the worker did not start")
	}
	if got := ask("scale 1000"); got != "100" {
		t.Fatalf("scale 1000: %s", got)
	}
	first, second := filepath.Join(t.TempDir(), "first"), filepath.Join(t.TempDir(), "second")
	for _, into := range []string{first, second} {
		n, err := flush.Request(context.Background(), dir, into)
		if err != nil || n != 1 {
			t.Fatalf("Request into %s: %d processes, %v; want 1", into, n, err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale registration is still there (%v)", err)
	}
	tool, err := covdataTool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p1, err := textProfile(context.Background(), tool, first)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := textProfile(context.Background(), tool, second)
	if err != nil {
		t.Fatal(err)
	}
	cb := capBlock(t, p1)
	if !reached(p1, "example.com/calc/calc/calc.go", cb) {
		t.Error("the first flush does not hold the cap block the worker ran")
	}
	if reached(p2, "example.com/calc/calc/calc.go", cb) {
		t.Error("the second flush holds the cap block: the first did not clear the counters")
	}

	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the worker: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "flush-*"))
	if len(left) > 0 {
		t.Errorf("left behind after stop: %q", left)
	}
	if n, err := flush.Request(context.Background(), dir, first); n != 0 || err != nil {
		t.Errorf("Request with no process: %d, %v", n, err)
	}
	if len(covFiles(t, dir)) < 2 {
		t.Errorf("stop wrote no counters into GOCOVERDIR: %q", covFiles(t, dir))
	}
}
