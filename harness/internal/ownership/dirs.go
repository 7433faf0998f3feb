package ownership

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Error says why someone other than the caller and root could have
// changed a file or directory, or what it leads to: it belongs to someone
// else (Owner), or someone else may write it (Writers).
type Error struct {
	Path string
	// Owner names the owner ("kh-other (uid 999)") when that is neither
	// the caller nor root.
	Owner string
	// Writers names who besides the owner may write it ("others", "its
	// group (staff)") when Owner is empty.
	Writers string
	Mode    fs.FileMode
}

func (e *Error) Error() string {
	if e.Owner != "" {
		what := ""
		if e.Mode&fs.ModeSymlink != 0 {
			what = ", a symbolic link,"
		}
		return fmt.Sprintf("%s%s belongs to %s, not to %s", e.Path, what, e.Owner, AllowedOwners())
	}
	return fmt.Sprintf("%s (mode %s) is writable by %s", e.Path, e.Mode, e.Writers)
}

// maxLinks bounds the symbolic links CheckDirChain follows.
const maxLinks = 8

// CheckDirChain checks that nobody but the caller and root can change what
// dir is, or what is written into it: dir and each directory above it, up
// to /, must belong to the caller or root, and no one else may write them,
// or they could replace an entry below them with their own or with a
// symbolic link that leads elsewhere. A sticky directory (/tmp) that
// belongs to the caller or root passes although others may write it:
// there others can add entries of their own but not rename or remove
// another's, and the entries below it are checked in turn. A symbolic link
// on the way passes when it belongs to the caller or root (its directory
// was checked already), and the directories it leads to are checked as
// well. The error is an *Error when that is what is wrong. Where files
// have no owner or Unix mode to read (Windows), nothing but the symbolic
// links and directories themselves is checked.
func CheckDirChain(dir string) error {
	return checkChain(dir, 0)
}

func checkChain(dir string, links int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var chain []string
	for p := abs; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if who := ForeignOwner(fi); who != "" {
				return &Error{Path: p, Owner: who, Mode: fi.Mode()}
			}
			if links == maxLinks {
				return fmt.Errorf("%s: more than %d symbolic links on the way", abs, maxLinks)
			}
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return err
			}
			if err := checkChain(target, links+1); err != nil {
				return err
			}
			continue
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
		if err := CheckDir(p, fi); err != nil {
			return err
		}
	}
	return nil
}

// CheckDir checks that the directory at path (fi describes it, from
// Lstat) belongs to the caller or root and that no one else may write it,
// unless it is sticky (see CheckDirChain); the error is an *Error.
func CheckDir(path string, fi fs.FileInfo) error {
	if who := ForeignOwner(fi); who != "" {
		return &Error{Path: path, Owner: who, Mode: fi.Mode()}
	}
	if fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	if who := OthersMayWrite(fi); who != "" {
		return &Error{Path: path, Writers: who, Mode: fi.Mode()}
	}
	return nil
}
