package report

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// What the report writes (the page, the summary, the attempts of a
// repeated run) goes into a directory nobody but the caller and root can
// change: one another user owns or may write could hold a symbolic link
// that leads the page and the summary elsewhere (to overwrite, or rename,
// a file of the caller's), and a run directory another user owns would
// show them the page, with the caller's source lines on it. So the
// directory and each above it must belong to the caller or root and be
// writable by no one else, as harness/internal/ownership checks it, sticky
// directories such as /tmp excepted; the directory itself may not be a
// symbolic link. It is then opened once (os.Root) and every file written
// relative to it, so that nothing swapped in on the way afterwards leads
// out of it.

// openOutDir opens dir to write into, making it and what is missing
// above it first (mode 0755), or says why it will not: what names what
// goes there ("the report"), fix how to write it elsewhere.
func openOutDir(dir, what, fix string) (*os.Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	refuse := func(err error) error {
		var oe *ownership.Error
		if !errors.As(err, &oe) {
			return fmt.Errorf("writing %s into %s: %w", what, dir, err)
		}
		if oe.Writers != "" {
			return fmt.Errorf("refusing to write %s into %s: %w, who could put a symbolic link in place of what is below it and lead what is written elsewhere; run `chmod go-w %s` if only you should write it, or %s",
				what, dir, err, oe.Path, fix)
		}
		return fmt.Errorf("refusing to write %s into %s: %w, who could read or change what is written there, or lead it elsewhere with a symbolic link; %s",
			what, dir, err, fix)
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		// Made below the nearest directory that exists, once that is
		// checked, and without leaving it (os.Root).
		base := filepath.Dir(abs)
		for {
			if _, err := os.Lstat(base); err == nil || base == filepath.Dir(base) {
				break
			}
			base = filepath.Dir(base)
		}
		if err := ownership.CheckDirChain(base); err != nil {
			return nil, refuse(err)
		}
		rel, err := filepath.Rel(base, abs)
		if err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(base)
		if err != nil {
			return nil, refuse(err)
		}
		err = r.MkdirAll(rel, 0o755)
		_ = r.Close()
		if err != nil {
			return nil, refuse(err)
		}
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, refuse(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return nil, fmt.Errorf("refusing to write %s into %s: it is a symbolic link (to %s), which whoever put it there may point anywhere; remove it, or %s",
			what, dir, target, fix)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("refusing to write %s into %s: it is %s, not a directory; %s", what, dir, ownership.KindOf(fi.Mode()), fix)
	}
	if err := ownership.CheckDirChain(abs); err != nil {
		return nil, refuse(err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, refuse(err)
	}
	// What was checked is what was opened: nothing replaced it between.
	if opened, err := r.Stat("."); err != nil || !os.SameFile(fi, opened) {
		_ = r.Close()
		return nil, fmt.Errorf("refusing to write %s into %s: it was replaced while it was checked; %s", what, dir, fix)
	}
	return r, nil
}

// writeFileIn writes data to the file name in r: to a new file first,
// renamed over name once written, so that a reader never sees half of it
// and a symbolic link at name is replaced rather than followed.
func writeFileIn(r *os.Root, name string, data []byte) error {
	var f *os.File
	var tmp string
	for {
		tmp = "." + name + "-" + rand.Text()
		var err error
		f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	defer func() { _ = r.Remove(tmp) }()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return r.Rename(tmp, name)
}
