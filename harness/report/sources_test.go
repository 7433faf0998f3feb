package report

import (
	"html/template"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Secrets a source root may hold that the page must never show.
const (
	secretKubeconfig = "SECRET-KUBECONFIG-TOKEN"
	secretGitConfig  = "SECRET-GIT-EXTRAHEADER-TOKEN"
	secretUntracked  = "SECRET-UNTRACKED-GO-FILE"
	secretPrivate    = "SECRET-PRIVATE-MODE-GO-FILE"
	secretDotDir     = "SECRET-GO-FILE-IN-A-DOT-DIRECTORY"
	secretNotGo      = "SECRET-TRACKED-TEXT-FILE"
)

// gitIn runs git in dir, with no configuration but the repository's.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// sourceCheckout writes a source root as a CI checkout is: a git
// repository whose .git/config holds a token, with the harness's files
// below .kubeharness/, and Go files git tracks and does not. With git
// false, it is the same tree without a repository.
func sourceCheckout(t *testing.T, git bool) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "e2e", "widgets_test.go"), numbered("IN-ROOT-LINE", 20))
	writeFile(t, filepath.Join(root, "e2e", "long_test.go"), strings.Repeat("x", 5000)+"END-OF-LONG-LINE\n")
	writeFile(t, filepath.Join(root, "e2e", "private_test.go"), strings.Repeat(secretPrivate+"\n", 20))
	if err := os.Chmod(filepath.Join(root, "e2e", "private_test.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "hack", ".internal", "tool.go"), strings.Repeat(secretDotDir+"\n", 20))
	writeFile(t, filepath.Join(root, "notes.txt"), strings.Repeat(secretNotGo+"\n", 20))
	if git {
		gitIn(t, root, "init", "-q")
		gitIn(t, root, "config", "http.extraheader", "AUTHORIZATION: basic "+secretGitConfig)
		gitIn(t, root, "add", ".")
	}
	// Written after git add: below .kubeharness/ (which a checkout's
	// .gitignore leaves out) and a Go file git does not track.
	writeFile(t, filepath.Join(root, ".kubeharness", "envtest", "kubeconfig"), strings.Repeat("token: "+secretKubeconfig+"\n", 20))
	writeFile(t, filepath.Join(root, "e2e", "generated_token.go"), strings.Repeat(secretUntracked+"\n", 20))
	return root
}

// TestSourceLinesOnlyOfFilesAnyoneHas: a report.json may name any file of
// the source root as a failure's location, at its longest tail; the page
// shows the lines of a world-readable Go file outside dot-directories that
// git tracks, and of nothing else, each line cut at sourceLineLen bytes.
func TestSourceLinesOnlyOfFilesAnyoneHas(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	const shown = `<tr class="hit"><td class="n">10</td><td>IN-ROOT-LINE-10</td></tr>`
	tests := []struct {
		name   string
		noGit  bool // the source root is no repository
		file   string
		line   int // 10 when 0
		want   string
		secret string
	}{
		{name: "a Go file git tracks", file: "/anything/e2e/widgets_test.go", want: shown},
		{name: "the kubeconfig below .kubeharness", file: "/anything/.kubeharness/envtest/kubeconfig", line: 1, secret: secretKubeconfig,
			want: "source lines not shown: only the lines of Go source files (.go) are shown"},
		{name: "the token in .git/config", file: ".git/config", line: 4, secret: secretGitConfig,
			want: "source lines not shown: only the lines of Go source files (.go) are shown"},
		{name: "a Go file below a dot-directory", file: "/ci/src/hack/.internal/tool.go", secret: secretDotDir,
			want: "source lines not shown: the file is below hack/.internal, a dot-directory, whose files are not shown"},
		{name: "a Go file git does not track", file: "/ci/src/e2e/generated_token.go", secret: secretUntracked,
			want: "source lines not shown: git does not track the file: only files git tracks are shown"},
		{name: "a Go file others may not read", file: "e2e/private_test.go", secret: secretPrivate,
			want: "source lines not shown: the file is not readable by others (mode -rw-------): only world-readable files are shown"},
		{name: "a text file git tracks", file: "notes.txt", secret: secretNotGo,
			want: "source lines not shown: only the lines of Go source files (.go) are shown"},
		{name: "a long line", file: "e2e/long_test.go", line: 1, secret: "END-OF-LONG-LINE",
			want: `<td>` + strings.Repeat("x", sourceLineLen) + ` …</td>`},
		{name: "no repository: a Go file", noGit: true, file: "e2e/generated_token.go", want: secretUntracked},
		{name: "no repository: the kubeconfig below .kubeharness", noGit: true, file: ".kubeharness/envtest/kubeconfig", line: 1,
			secret: secretKubeconfig, want: "source lines not shown: only the lines of Go source files (.go) are shown"},
	}
	roots := map[bool]string{true: sourceCheckout(t, true), false: sourceCheckout(t, false)}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.line
			if line == 0 {
				line = 10
			}
			page := renderPage(t, failedRun(t, tc.file, line), RenderOptions{SourceRoot: roots[!tc.noGit]})
			if tc.secret != "" && strings.Contains(page, tc.secret) {
				t.Errorf("the page shows what %s holds (%s)", tc.file, tc.secret)
			}
			if !strings.Contains(page, template.HTMLEscapeString(tc.want)) && !strings.Contains(page, tc.want) {
				t.Errorf("the page lacks %s", tc.want)
			}
		})
	}
}

// TestSourceLinesWithoutGit: where git is not on PATH, what git tracks
// cannot be asked, and the other rules alone decide: a Go file of the
// repository git does not track is shown, the kubeconfig still not.
func TestSourceLinesWithoutGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	root := sourceCheckout(t, true)
	t.Setenv("PATH", t.TempDir())
	page := renderPage(t, failedRun(t, "e2e/generated_token.go", 10), RenderOptions{SourceRoot: root})
	if !strings.Contains(page, secretUntracked) {
		t.Error("without git, the page does not show a world-readable Go file of the source root")
	}
	page = renderPage(t, failedRun(t, ".kubeharness/envtest/kubeconfig", 1), RenderOptions{SourceRoot: root})
	if strings.Contains(page, secretKubeconfig) {
		t.Error("without git, the page shows the kubeconfig below .kubeharness")
	}
}
