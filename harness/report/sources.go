package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// The page shows the source lines around each failure, and the page may
// be read by whoever wrote the run's report.json: a failure's location
// is data, and could name any file of the source root, at its longest
// tail (a kubeconfig below .kubeharness/, the token a CI checkout keeps in
// .git/config). So besides being below the source root, a file's lines
// are shown only when it is Go source (its name ends in .go), others may
// read it already (its mode is world-readable), no dot-directory below
// the source root holds it, and, where the source root is in a git
// repository (a .git at or above it), git tracks it: what anyone with the
// repository has. Each line shown is cut at sourceLineLen bytes.

// sourceLineLen bounds the length of a source line the page shows, in
// bytes; a longer one is cut and ends in " …".
const sourceLineLen = 300

// Why a failure's source lines are not shown, beyond paths.go's notes.
const (
	noteSourceNotGo       = "only the lines of Go source files (.go) are shown"
	noteSourceDotDir      = "the file is below %s, a dot-directory, whose files are not shown"
	noteSourceNotReadable = "the file is not readable by others (mode %s): only world-readable files are shown"
	noteSourceUntracked   = "git does not track the file: only files git tracks are shown"
	noteSourceGit         = "git cannot list the files it tracks below the source root, so none is shown: %v"
)

// gitRepoEnv are the variables that make git read another repository
// than the one its working directory is in; git is run without them.
var gitRepoEnv = []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR=",
	"GIT_OBJECT_DIRECTORY=", "GIT_ALTERNATE_OBJECT_DIRECTORIES=", "GIT_NAMESPACE=", "GIT_PREFIX="}

// gitFiles are the files git tracks below a source root.
type gitFiles struct {
	// files holds their paths relative to the source root, slash
	// separated; nil when there is no repository or no git.
	files map[string]bool
	err   error
}

// tracked lists the files git tracks below t.real (git ls-files), once.
// Without a repository at or above t.real there is nothing to list; nor
// is there without git on $PATH, and then only the other rules (Go source,
// world-readable, outside dot-directories) decide what is shown.
func (t *tree) tracked() *gitFiles {
	if t.git != nil {
		return t.git
	}
	t.git = &gitFiles{}
	if !inGitRepository(t.real) {
		return t.git
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return t.git // no git: the other rules alone (see above)
	}
	// core.fsmonitor off: the repository's configuration names no
	// program for ls-files to run.
	cmd := exec.Command(git, "-c", "core.fsmonitor=false", "ls-files", "-z", "--cached")
	cmd.Dir = t.real
	cmd.Env = withoutEnv(os.Environ(), gitRepoEnv)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if line, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n"); line != "" {
			err = fmt.Errorf("%w: %s", err, line)
		}
		t.git.err = fmt.Errorf("git ls-files in %s: %w", t.real, err)
		return t.git
	}
	t.git.files = map[string]bool{}
	for _, name := range strings.Split(string(out), "\x00") {
		if name != "" {
			t.git.files[name] = true
		}
	}
	return t.git
}

// inGitRepository reports whether dir or a directory above it holds .git.
func inGitRepository(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// withoutEnv is env without the variables names ("NAME=") lists.
func withoutEnv(env, names []string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// shownByName says why the lines of the file at rel (relative to t.real,
// symlinks resolved) are not shown, by its name and whether git tracks
// it; "" when they may be.
func (t *tree) shownByName(rel string) string {
	if filepath.Ext(rel) != ".go" {
		return noteSourceNotGo
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ".") {
			return fmt.Sprintf(noteSourceDotDir, strings.Join(parts[:i+1], "/"))
		}
	}
	git := t.tracked()
	switch {
	case git.err != nil:
		return fmt.Sprintf(noteSourceGit, git.err)
	case git.files != nil && !git.files[filepath.ToSlash(rel)]:
		return noteSourceUntracked
	}
	return ""
}

// readShown reads the Go source file at rel in t, of at most
// maxSourceSize bytes, when its lines may be shown; else the note says
// why not.
func (t *tree) readShown(rel string) ([]byte, string) {
	if why := t.shownByName(rel); why != "" {
		return nil, why
	}
	f, fi, err := t.open(rel)
	if err != nil {
		if errors.Is(err, errNotRegular) {
			return nil, err.Error()
		}
		return nil, fmt.Sprintf("reading the file: %v", err)
	}
	defer func() { _ = f.Close() }()
	if fi.Mode().Perm()&0o004 == 0 {
		return nil, fmt.Sprintf(noteSourceNotReadable, fi.Mode().Perm())
	}
	data, err := readAtMost(f, fi, maxSourceSize)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, err.Error()
		}
		return nil, fmt.Sprintf("reading the file: %v", err)
	}
	return data, ""
}

// cutLine is line cut at sourceLineLen bytes (not inside a character),
// marked as cut.
func cutLine(line string) string {
	if len(line) <= sourceLineLen {
		return line
	}
	n := sourceLineLen
	for n > 0 && !utf8.RuneStart(line[n]) {
		n--
	}
	return line[:n] + " …"
}
