package ownership

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Whoever may change a program before it runs decides what it does: the
// control-plane binaries run as the caller, with its files and its
// credentials. CheckRun is the one rule for every way the harness starts
// one (the CLI's store, the control plane's binary directory, the envtest
// drop-in's sources), and RefusalError the error that refuses them.

// CheckRun returns what lets someone other than the caller and root change
// the programs at paths (each once; nil when nothing does):
//   - the directory of each, and every directory above it up to /, must
//     pass CheckDirChain: they belong to the caller or root and no one else
//     may write them, but for a sticky directory such as /tmp;
//   - the directory of each, and each directory above it up to strictRoot
//     when strictRoot lies above it (a store's root), must moreover be
//     writable by no one else even with the sticky bit: whoever may add an
//     entry there adds a program that is chosen by its name
//     (kube-apiserver-test beside kube-apiserver, a newer version in a
//     store);
//   - each program must be a regular file that belongs to the caller or
//     root and that no one else may write. A symbolic link is followed (it
//     lies in a directory checked already) and where it leads is checked
//     the same way.
//
// A path that does not exist is a problem too; DirProblems checks a
// directory a program is still to be looked up in. Where files have no
// owner or Unix mode to read (Windows) nothing but the kinds of files is
// checked.
func CheckRun(strictRoot string, paths ...string) []error {
	c := runCheck{seen: map[string]bool{}}
	for _, p := range paths {
		c.program(p, strictRoot, 0)
	}
	return c.problems
}

// DirProblems returns what CheckRun finds wrong with dir, where programs
// are looked up by name, and the directories above it (strictRoot as
// there).
func DirProblems(strictRoot, dir string) []error {
	c := runCheck{seen: map[string]bool{}}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return []error{err}
	}
	c.dir(abs, strictRoot)
	return c.problems
}

// CheckPrivate checks that path (fi describes it) belongs to the caller or
// root and that no one else may write it, sticky or not; the error is an
// *Error.
func CheckPrivate(path string, fi fs.FileInfo) error {
	if who := ForeignOwner(fi); who != "" {
		return &Error{Path: path, Owner: who, Mode: fi.Mode()}
	}
	if who := OthersMayWrite(fi); who != "" {
		return &Error{Path: path, Writers: who, Mode: fi.Mode()}
	}
	return nil
}

type runCheck struct {
	problems []error
	seen     map[string]bool
}

// add records err unless the same was said already.
func (c *runCheck) add(err error) {
	if err == nil || c.seen["\x00"+err.Error()] {
		return
	}
	c.seen["\x00"+err.Error()] = true
	c.problems = append(c.problems, err)
}

func (c *runCheck) program(path, strictRoot string, links int) {
	abs, err := filepath.Abs(path)
	if err != nil {
		c.add(err)
		return
	}
	c.dir(filepath.Dir(abs), strictRoot)
	fi, err := os.Lstat(abs)
	if err != nil {
		c.add(err)
		return
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if links == maxLinks {
			c.add(fmt.Errorf("%s: more than %d symbolic links on the way", path, maxLinks))
			return
		}
		target, err := filepath.EvalSymlinks(abs)
		if err != nil {
			c.add(err)
			return
		}
		c.program(target, filepath.Dir(target), links+1)
	case !fi.Mode().IsRegular():
		c.add(fmt.Errorf("%s is %s, not a program", abs, KindOf(fi.Mode())))
	default:
		c.add(CheckPrivate(abs, fi))
	}
}

// dir checks the absolute directory dir, and strictly each directory up to
// strictRoot when that lies above it.
func (c *runCheck) dir(dir, strictRoot string) {
	if c.seen[dir] {
		return
	}
	c.seen[dir] = true
	c.add(CheckDirChain(dir))
	top := dir
	if root, err := filepath.Abs(strictRoot); err == nil {
		if rel, err := filepath.Rel(root, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			top = root
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			c.add(err)
			return
		}
		c.add(CheckPrivate(d, fi))
		if d == top || d == filepath.Dir(d) {
			return
		}
	}
}

// RefusalError refuses binaries for Problems (CheckRun's): it starts with
// What, says every problem, then every fix, `chmod go-w` of what others
// may write first.
type RefusalError struct {
	// What is refused, and where from: "refusing the binaries store
	// /srv/bin".
	What     string
	Problems []error
	// Fixes are the fixes besides `chmod go-w`: "use a store only you can
	// write (another --bin-dir)".
	Fixes []string
}

// Refuse is nil without problems, else a *RefusalError.
func Refuse(what string, problems []error, fixes ...string) error {
	if len(problems) == 0 {
		return nil
	}
	return &RefusalError{What: what, Problems: problems, Fixes: fixes}
}

func (e *RefusalError) Error() string {
	var said, chmod []string
	for _, p := range e.Problems {
		said = append(said, p.Error())
		var oe *Error
		if errors.As(p, &oe) && oe.Owner == "" && oe.Writers != "" {
			chmod = append(chmod, oe.Path)
		}
	}
	fixes := e.Fixes
	if len(chmod) > 0 {
		fixes = append([]string{"run `chmod go-w " + strings.Join(chmod, " ") + "`"}, fixes...)
	}
	msg := e.What + ": others could change the binaries kubeharness runs: " + strings.Join(said, "; ")
	if len(fixes) > 0 {
		msg += "; " + strings.Join(fixes, ", or ")
	}
	return msg
}

func (e *RefusalError) Unwrap() []error { return e.Problems }

// KindOf names, with its article, what a file of mode m is: "a directory",
// "a named pipe", "a character device", "a regular file". Errors that
// refuse a file for what it is say it so.
func KindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a " + strings.TrimSpace(m.Type().String()) + " file"
}
