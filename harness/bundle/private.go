package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Modes of what a bundle writes: its writer's alone, whatever the umask.
// A bundle holds a namespace's objects and its controllers' log lines,
// which can carry what a spec put into a ConfigMap or a log line (a token,
// a URL with a password); on a machine others share, they are not theirs
// to read. CI uploads the directory as an artifact for those who may see
// the run, which does not keep these modes.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// FailuresDir is the directory below the artifacts directory that Dir
// puts bundles in.
const FailuresDir = "failures"

// OpenDir makes the bundle directory dir ready for its files and opens it
// as an os.Root, so that what is written through it stays inside it.
//
// Its anchor is the nearest directory above dir named failures (where Dir
// puts bundles), or dir's parent where there is none. The anchor's parent
// (the artifacts directory, which others may share) is made when missing,
// with 0755 as before. The anchor and every directory from it down to dir
// are made with mode 0700 when missing; one that exists must be a
// directory, not a symbolic link, owned by the caller, and writable by no
// one else: whoever else may write it could have put a symbolic link where
// a bundle's file is to be written, or swap a directory while it is
// written. An existing one others may only read is narrowed to 0700
// (failures/ of an older kubeharness, say), except an anchor not named
// failures, which is the caller's to mode. Owners and modes are checked
// on Unix only; elsewhere the directory's ACL decides who may read it.
func OpenDir(dir string) (*os.Root, error) {
	dir = filepath.Clean(dir)
	anchor, rel, err := splitAnchor(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(anchor), 0o755); err != nil {
		return nil, fmt.Errorf("making the directory of failure bundles: %w", err)
	}
	root, err := openAnchor(anchor, filepath.Base(anchor) == FailuresDir)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return root, nil
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		sub, err := openSubdir(root, name)
		_ = root.Close()
		if err != nil {
			return nil, err
		}
		root = sub
	}
	return root, nil
}

// splitAnchor splits dir into its anchor (OpenDir) and the path from the
// anchor to dir.
func splitAnchor(dir string) (anchor, rel string, err error) {
	anchor = filepath.Dir(dir)
	for p := anchor; ; p = filepath.Dir(p) {
		if filepath.Base(p) == FailuresDir {
			anchor = p
			break
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	if rel, err = filepath.Rel(anchor, dir); err != nil {
		return "", "", fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	return anchor, rel, nil
}

// openAnchor makes the directory path (mode 0700) when missing, checks that
// it is private (OpenDir), and opens it. narrow narrows an existing one's
// mode to 0700.
func openAnchor(path string, narrow bool) (*os.Root, error) {
	err := os.Mkdir(path, DirMode)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("making the directory of failure bundles: %w", err)
	}
	narrow = narrow || err == nil
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("checking the directory of failure bundles: %w", err)
	}
	if err := checkDir(path, fi); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("opening the directory of failure bundles: %w", err)
	}
	if err := checkOpened(root, path, fi, narrow); err != nil {
		_ = root.Close()
		return nil, err
	}
	return root, nil
}

// openSubdir makes the directory name in parent (mode 0700) when missing,
// checks that it is private (OpenDir), narrows it to 0700, and opens it.
func openSubdir(parent *os.Root, name string) (*os.Root, error) {
	path := filepath.Join(parent.Name(), name)
	if err := parent.Mkdir(name, DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("making bundle directory %s: %w", path, err)
	}
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("checking bundle directory %s: %w", path, err)
	}
	if err := checkDir(path, fi); err != nil {
		return nil, err
	}
	root, err := parent.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("opening bundle directory %s: %w", path, err)
	}
	if err := checkOpened(root, path, fi, true); err != nil {
		_ = root.Close()
		return nil, err
	}
	return root, nil
}

// checkDir refuses what fi (from Lstat) says is not a directory of the
// caller's that only the caller may write.
func checkDir(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link: failure bundles are written only into a real directory, which a link's target may not be; remove the link", path)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory but %s: failure bundles are written into a directory there; remove it", path, ownership.KindOf(fi.Mode()))
	}
	if why := notPrivate(fi); why != "" {
		return fmt.Errorf("%s is %s: whoever else may write it can make a bundle's files land elsewhere; give the suite an artifacts directory only you may write, or remove %s if it is a leftover", path, why, path)
	}
	return nil
}

// checkOpened checks that root is the directory fi described when it was
// checked, not one swapped in since, and narrows its mode to 0700 when
// narrow says so.
func checkOpened(root *os.Root, path string, fi fs.FileInfo, narrow bool) error {
	opened, err := root.Stat(".")
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if !os.SameFile(fi, opened) {
		return fmt.Errorf("%s changed while it was opened: someone else is writing the directory of failure bundles; give the suite an artifacts directory of its own", path)
	}
	if narrow && opened.Mode().Perm() != DirMode {
		if err := root.Chmod(".", DirMode); err != nil {
			return fmt.Errorf("making %s private: %w", path, err)
		}
	}
	return nil
}

// WriteFile writes data to the file name in the bundle directory dir
// (OpenDir), with mode 0600, replacing what is there: a file or a symbolic
// link is removed, not followed, and the new file is created afresh. It
// is how a suite adds a part of its own to a bundle (Failures.Collect of
// harness/suite).
func WriteFile(dir, name string, data []byte) error {
	root, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	return writeFile(root, name, data)
}

// writeFile writes data to a new file name in root, mode 0600, after
// removing what is there: creating it exclusively never follows a link
// planted in its place.
func writeFile(root *os.Root, name string, data []byte) error {
	path := filepath.Join(root.Name(), name)
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	// The umask can take bits from the mode asked for; make it exact.
	err = f.Chmod(FileMode)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
