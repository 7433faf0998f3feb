package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A run's JSON report is data, and may name any file: a failure's
// location or a bundle entry of /etc/shadow, ../../.ssh/id_rsa or a
// symlink that leads there. The report reads what such a path names only
// below a directory its caller chose: source lines below the source root
// (RenderOptions.SourceRoot), bundles below the run directory. A path is
// below a directory when, cleaned and with its symlinks resolved, it is
// the directory or inside it; a path outside it by its name alone is not
// even looked at.

// maxSourceSize bounds the size of a source file the report reads lines
// from.
const maxSourceSize = 4 << 20

// Why a failure's source lines are not shown (Spec.SourceNote) or its
// bundle is not (Spec.BundleNote).
const (
	noteNoSourceRoot   = "no source root to read them from: run kubeharness report in the suite's Go module, or name the root (--source-root, RenderOptions.SourceRoot)"
	noteSourceNotBelow = "the file is not below the source root %s"
	noteSourceLeadsOut = "the file is a symlink out of the source root %s"
	noteSourceNotFile  = "not a regular file"
	noteSourceTooLarge = "the file is larger than 4 MiB"
	noteSourceShorter  = "the file has %d lines: it changed since the run"
	noteBundleOutside  = "the bundle the suite named, %s, is outside the run directory: not read"
)

var (
	errNotRegular = errors.New(noteSourceNotFile)
	errTooLarge   = errors.New(noteSourceTooLarge)
)

// tree is a directory the report reads below.
type tree struct {
	// dir is the directory as the caller named it, made absolute; real is
	// it with its symlinks resolved.
	dir, real string
	// git are the files git tracks below a source root (tracked).
	git *gitFiles
}

// openTree is the tree of dir, which must exist.
func openTree(dir string) (*tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return &tree{dir: abs, real: real}, nil
}

// within reports whether path is dir or lies inside it; both are absolute
// and clean.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// place is where a path lies relative to a tree.
type place int

const (
	missing  place = iota // nothing there, or it cannot be resolved
	outside               // outside by its name
	leadsOut              // inside by its name, outside once resolved
	inside
)

// locate resolves path (absolute, or relative to the working directory)
// and returns it relative to t.real when it lies in t. It looks at
// nothing whose name is outside t.
func (t *tree) locate(path string) (string, place) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", missing
	}
	if !within(t.dir, abs) && !within(t.real, abs) {
		return "", outside
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", missing
	}
	rel, err := filepath.Rel(t.real, real)
	if err != nil || !within(t.real, real) {
		return "", leadsOut
	}
	return rel, inside
}

// find finds what a run recorded at recorded (a file, or a directory when
// dir is true) in t: there when that is in t, else at the longest tail of
// the recorded path below t (the run ran on another machine, or in
// another checkout). It returns the path relative to t.real, or why there
// is none.
func (t *tree) find(recorded string, dir bool) (string, string) {
	why := fmt.Sprintf(noteSourceNotBelow, t.dir)
	parts := strings.Split(filepath.ToSlash(recorded), "/")
	for i := range parts {
		p := filepath.FromSlash(strings.Join(parts[i:], "/"))
		if i > 0 || !filepath.IsAbs(p) {
			p = filepath.Join(t.real, p)
		}
		rel, where := t.locate(p)
		switch where {
		case leadsOut:
			why = fmt.Sprintf(noteSourceLeadsOut, t.dir)
			continue
		case outside, missing:
			continue
		}
		fi, err := os.Stat(filepath.Join(t.real, rel))
		switch {
		case err != nil:
		case dir && fi.IsDir(), !dir && fi.Mode().IsRegular():
			return rel, ""
		case !dir && !fi.IsDir():
			why = noteSourceNotFile
		}
	}
	return "", why
}

// open opens the regular file at rel in t: opened in t (os.Root), so that
// a symlink put in place after find does not lead out of it.
func (t *tree) open(rel string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenInRoot(t.real, rel)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, errNotRegular
	}
	return f, fi, nil
}

// readAtMost reads f (fi describes it) when it holds at most limit bytes.
func readAtMost(f *os.File, fi os.FileInfo, limit int64) ([]byte, error) {
	if fi.Size() > limit {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// moduleRoot is the directory of the go.mod nearest above dir, dir
// included; "" when there is none.
func moduleRoot(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && fi.Mode().IsRegular() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
