package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/bundle"
)

// What files outside the directories the report may read hold; a page
// that shows it has read them.
const (
	secretSource = "SECRET-OUTSIDE-THE-SOURCE-ROOT"
	secretBundle = "SECRET-OUTSIDE-THE-RUN-DIRECTORY"
)

// writeFile writes data to path, making its directory.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// numbered is n lines "<prefix>-<line number>".
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s-%02d\n", prefix, i)
	}
	return b.String()
}

// failedRun writes a run directory whose report.json holds one spec,
// failed at file:line.
func failedRun(t *testing.T, file string, line int) string {
	t.Helper()
	dir := t.TempDir()
	writeReport(t, dir, file, line, "")
	return dir
}

// writeReport writes a report.json into dir that holds one spec, failed
// at file:line, with a bundle entry when bundleEntry is not empty.
func writeReport(t *testing.T, dir, file string, line int, bundleEntry string) {
	t.Helper()
	b := mkSpec("rejects a widget").failed("boom")
	b.r.Failure.Location = types.CodeLocation{FileName: file, LineNumber: line}
	if bundleEntry != "" {
		b.entry(BundleEntry, bundleEntry)
	}
	data, err := json.Marshal([]types.Report{mkSuite(t, 1, b)})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, JSONReportFile), string(data))
}

// renderPage writes the page of the run in dir and returns it.
func renderPage(t *testing.T, dir string, opts RenderOptions) string {
	t.Helper()
	opts.Previous = filepath.Join(t.TempDir(), "none.json")
	w, err := Write(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// TestSourceLinesOnlyBelowTheSourceRoot: a report.json may name any file
// as a failure's location; the page shows the lines of a file below the
// source root and of nothing else, however the path leads out of it.
func TestSourceLinesOnlyBelowTheSourceRoot(t *testing.T) {
	parent := t.TempDir()
	root, elsewhere := filepath.Join(parent, "src"), filepath.Join(parent, "elsewhere")
	writeFile(t, filepath.Join(root, "e2e", "widgets_test.go"), numbered("IN-ROOT-LINE", 20))
	writeFile(t, filepath.Join(root, "e2e", "huge_test.go"), strings.Repeat(secretSource+"\n", (4<<20)/len(secretSource)+1))
	secret := filepath.Join(elsewhere, "secret.go")
	writeFile(t, secret, strings.Repeat(secretSource+"\n", 20))
	symlink(t, secret, filepath.Join(root, "e2e", "link_test.go"))
	symlink(t, elsewhere, filepath.Join(root, "vendor"))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	fromWD, err := filepath.Rel(wd, secret)
	if err != nil {
		t.Fatal(err)
	}
	passwd := ""
	if data, err := os.ReadFile("/etc/passwd"); err == nil {
		passwd, _, _ = strings.Cut(string(data), "\n")
	}

	const shown = `<tr class="hit"><td class="n">10</td><td>IN-ROOT-LINE-10</td></tr>`
	tests := []struct {
		name string
		file string
		line int // 10 when 0
		// want is on the page, secret not.
		want   []string
		secret string
	}{
		{name: "a file below the root", file: filepath.Join(root, "e2e", "widgets_test.go"), want: []string{shown}},
		{name: "a path relative to the root", file: "e2e/widgets_test.go", want: []string{shown}},
		{name: "an absolute path outside the root", file: secret, secret: secretSource,
			want: []string{"source lines not shown: the file is not below the source root"}},
		{name: "/etc/passwd", file: "/etc/passwd", line: 1, secret: passwd,
			want: []string{"source lines not shown: the file is not below the source root"}},
		{name: "a relative path whose ../../ leads out of the root", file: "e2e/../../elsewhere/secret.go", secret: secretSource,
			want: []string{"source lines not shown: the file is not below the source root"}},
		{name: "a path relative to the working directory", file: fromWD, secret: secretSource,
			want: []string{"source lines not shown: the file is not below the source root"}},
		{name: "a symlink in the root to a file outside it", file: filepath.Join(root, "e2e", "link_test.go"), secret: secretSource,
			want: []string{"source lines not shown: the file is a symlink out of the source root"}},
		{name: "a symlinked directory in the root leading out of it", file: filepath.Join(root, "vendor", "secret.go"), secret: secretSource,
			want: []string{"source lines not shown: the file is a symlink out of the source root"}},
		{name: "a file below the root too large to read", file: filepath.Join(root, "e2e", "huge_test.go"), secret: secretSource,
			want: []string{"source lines not shown: the file is larger than 4 MiB"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file == "/etc/passwd" && passwd == "" {
				t.Skip("no /etc/passwd to read")
			}
			line := tc.line
			if line == 0 {
				line = 10
			}
			page := renderPage(t, failedRun(t, tc.file, line), RenderOptions{SourceRoot: root})
			if tc.secret != "" && strings.Contains(page, template.HTMLEscapeString(tc.secret)) {
				t.Errorf("the page shows the content of %s, which is not below the source root %s", tc.file, root)
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %s", w)
				}
			}
			if loc := fmt.Sprintf("%s:%d", tc.file, line); !strings.Contains(page, template.HTMLEscapeString(loc)) && !strings.Contains(page, "e2e/widgets_test.go:10") {
				t.Errorf("the page does not show the failure's location %s", loc)
			}
		})
	}
}

// TestDefaultSourceRoot: without a source root, the report reads source
// lines below the Go module the working directory is in, and none outside
// any module (the working directory may be a home directory).
func TestDefaultSourceRoot(t *testing.T) {
	parent := t.TempDir()
	module, plain := filepath.Join(parent, "module"), filepath.Join(parent, "plain")
	writeFile(t, filepath.Join(module, "go.mod"), "module example.com/widgets\n")
	inModule := filepath.Join(module, "e2e", "widgets_test.go")
	writeFile(t, inModule, numbered("IN-ROOT-LINE", 20))
	inPlain := filepath.Join(plain, "id_rsa")
	writeFile(t, inPlain, strings.Repeat(secretSource+"\n", 20))
	for d := plain; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			t.Skipf("%s is in the Go module %s", plain, d)
		}
	}

	t.Chdir(filepath.Join(module, "e2e"))
	page := renderPage(t, failedRun(t, inModule, 10), RenderOptions{})
	if !strings.Contains(page, `<tr class="hit"><td class="n">10</td><td>IN-ROOT-LINE-10</td></tr>`) || !strings.Contains(page, "e2e/widgets_test.go:10") {
		t.Errorf("a run made in a subdirectory of a Go module: the page lacks the source lines of a file in the module")
	}

	t.Chdir(plain)
	page = renderPage(t, failedRun(t, inPlain, 10), RenderOptions{})
	if strings.Contains(page, secretSource) {
		t.Errorf("a run made outside any Go module: the page shows the content of %s, in the working directory", inPlain)
	}
	if !strings.Contains(page, "source lines not shown: no source root") {
		t.Error("the page does not say why it shows no source lines")
	}
}

// TestBundlesOnlyBelowTheRunDirectory: the page lists and reads a bundle
// only below the run directory, whatever the suite's bundle entry names,
// and reads no file in it that leads elsewhere.
func TestBundlesOnlyBelowTheRunDirectory(t *testing.T) {
	elsewhere := t.TempDir()
	writeFile(t, filepath.Join(elsewhere, bundle.EventsFile), secretBundle+" events\n")
	writeFile(t, filepath.Join(elsewhere, "stolen.log"), secretBundle+" log\n")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	fromWD, err := filepath.Rel(wd, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	const spec = "widgets rejects a widget"

	tests := []struct {
		name string
		// setup makes the run directory's files and returns the bundle
		// entry, if any.
		setup  func(t *testing.T, dir string) string
		want   []string
		absent []string
	}{{
		name:   "a bundle entry naming a directory outside the run directory",
		setup:  func(*testing.T, string) string { return elsewhere },
		want:   []string{"the bundle the suite named, " + elsewhere + ", is outside the run directory: not read"},
		absent: []string{secretBundle, "stolen.log"},
	}, {
		name:   "a relative bundle entry leading out of the run directory",
		setup:  func(*testing.T, string) string { return fromWD },
		want:   []string{"is outside the run directory: not read"},
		absent: []string{secretBundle, "stolen.log"},
	}, {
		name: "the bundle's directory in the run directory is a symlink out of it",
		setup: func(t *testing.T, dir string) string {
			symlink(t, elsewhere, bundle.Dir(dir, spec))
			return ""
		},
		want:   []string{"is outside the run directory: not read"},
		absent: []string{secretBundle, "stolen.log"},
	}, {
		name: "a bundle below the run directory with a file that is a symlink out of it",
		setup: func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(bundle.Dir(dir, spec), "widgets.log"), "IN-RUN-LOG\n")
			symlink(t, filepath.Join(elsewhere, bundle.EventsFile), filepath.Join(bundle.Dir(dir, spec), bundle.EventsFile))
			return ""
		},
		want:   []string{"IN-RUN-LOG", `href="../failures/widgets-rejects-a-widget/widgets.log"`, "1 symlinks or special files not shown"},
		absent: []string{secretBundle, `href="../failures/widgets-rejects-a-widget/events.txt"`},
	}, {
		name: "a bundle below the run directory that the entry names",
		setup: func(t *testing.T, dir string) string {
			named := filepath.Join(dir, "failures", "named")
			writeFile(t, filepath.Join(named, "widgets.log"), "IN-RUN-LOG\n")
			return named
		},
		want: []string{"IN-RUN-LOG", `href="../failures/named/widgets.log"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeReport(t, dir, "", 0, tc.setup(t, dir))
			page := renderPage(t, dir, RenderOptions{SourceRoot: t.TempDir()})
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %s", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(page, a) {
					t.Errorf("the page holds %s: it read or listed what is not below the run directory %s", a, dir)
				}
			}
		})
	}
}
