package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runDir copies the recorded run with one failure into a directory named
// name below parent.
func runDir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.CopyFS(dir, os.DirFS(runOne)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// elsewhereDir is a directory of the caller's, which a planted link
// leads to, with a summary.json of its own.
func elsewhereDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, SummaryFile), "THE CALLER'S OWN FILE\n")
	return dir
}

// untouched fails the test when Write wrote, or renamed, anything in dir.
func untouched(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if data, err := os.ReadFile(filepath.Join(dir, SummaryFile)); err != nil || string(data) != "THE CALLER'S OWN FILE\n" || len(names) != 1 {
		t.Errorf("%s holds %q and its summary.json %q (%v): the report wrote where a link led it", dir, names, data, err)
	}
}

// wantRefused fails the test unless err says each of want.
func wantRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want it refused, saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// TestWriteRefusesALinkedReportDirectory: a symbolic link at
// <run>/report, or as --out, is refused: the page and summary are not
// written, nor the summary renamed, where it leads.
func TestWriteRefusesALinkedReportDirectory(t *testing.T) {
	t.Run("report", func(t *testing.T) {
		elsewhere := elsewhereDir(t)
		dir := runDir(t, t.TempDir(), "artifacts")
		symlink(t, elsewhere, filepath.Join(dir, OutDir))
		_, err := Write(dir, RenderOptions{})
		wantRefused(t, err, "refusing to write the report into "+filepath.Join(dir, OutDir), "is a symbolic link (to "+elsewhere+")", "remove it, or pass --out")
		untouched(t, elsewhere)
	})
	t.Run("merge", func(t *testing.T) {
		elsewhere := elsewhereDir(t)
		parent := t.TempDir()
		out := filepath.Join(parent, "merged")
		symlink(t, elsewhere, out)
		_, err := Merge([]string{runDir(t, parent, "shard-1")}, RenderOptions{OutDir: out})
		wantRefused(t, err, "is a symbolic link")
		untouched(t, elsewhere)
	})
	t.Run("attempts", func(t *testing.T) {
		elsewhere := elsewhereDir(t)
		// Named as an attempt of an earlier run, which WriteAttempt
		// removes from the attempts directory.
		writeFile(t, filepath.Join(elsewhere, "1-1.json"), "[]")
		if err := os.Remove(filepath.Join(elsewhere, SummaryFile)); err != nil {
			t.Fatal(err)
		}
		artifacts := t.TempDir()
		symlink(t, elsewhere, filepath.Join(artifacts, AttemptsDir))
		err := writeAttempt(filepath.Join(artifacts, AttemptsDir), "2", mkSuite(t, 1, mkSpec("a")))
		wantRefused(t, err, "is a symbolic link")
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 || entries[0].Name() != "1-1.json" {
			t.Errorf("WriteAttempt wrote or removed files where the link led: %v", entries)
		}
	})
}
