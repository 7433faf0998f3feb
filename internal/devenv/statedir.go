package devenv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// stateMarkerName is the file env up writes into a state directory it
// creates (or adopts while empty). Down, status, restart and the
// supervisor use a directory only when it holds this marker, written by
// the caller, and the directory is the caller's and writable by nobody
// else: down removes run/ and the kubeconfigs there, and up writes the
// admin kubeconfig there, so a directory that is not an environment's
// (--state-dir / or a home directory) or that another user can write in
// (a shared /tmp/envtest) is refused.
const stateMarkerName = ".kubeharness-envtest"

// stateMarkerText is the marker's content, and what it must hold.
const stateMarkerText = "This is the state directory of a kubeharness envtest environment, made by `kubeharness env up`.\n" +
	"`kubeharness env down` removes run/, state.json and the kubeconfigs in it; logs stay.\n"

func (p envPaths) marker() string { return filepath.Join(p.dir, stateMarkerName) }

// stateDirKind is what a state directory that passed the checks holds.
type stateDirKind int

const (
	// stateDirMissing: there is no directory yet.
	stateDirMissing stateDirKind = iota
	// stateDirEmpty: an empty directory without the marker.
	stateDirEmpty
	// stateDirMarked: a state directory env up made (it has the marker).
	stateDirMarked
)

// inspectStateDir checks paths.dir and says what it holds. It fails when
// the directory is no place for an environment of the caller's: not a
// directory, not owned by the caller, writable by group or others, below a
// directory everyone may write in without the sticky bit (someone could
// swap it), with a marker that is not the caller's, or not empty and
// without the marker (a directory env up did not make).
func inspectStateDir(paths envPaths) (stateDirKind, error) {
	dir := paths.dir
	if err := checkAncestors(dir); err != nil {
		return 0, err
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return stateDirMissing, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checking the state directory: %w", err)
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("state directory %s is not a directory (%s): pass --state-dir with a directory that does not exist yet; env up creates it", dir, fileType(fi))
	}
	if err := checkOwnFile(dir, fi, "state directory", "pass --state-dir with a directory of your own that does not exist yet (env up creates it, mode 0700)"); err != nil {
		return 0, err
	}
	mi, err := os.Lstat(paths.marker())
	switch {
	case err == nil:
		if !mi.Mode().IsRegular() {
			return 0, fmt.Errorf("%s is not a regular file (%s), so %s is no state directory env up made: pass --state-dir with a directory that does not exist yet; env up creates it",
				paths.marker(), fileType(mi), dir)
		}
		if err := checkOwnFile(paths.marker(), mi, "the state directory's marker", "pass --state-dir with a directory that does not exist yet; env up creates it"); err != nil {
			return 0, err
		}
		data, err := os.ReadFile(paths.marker())
		if err != nil {
			return 0, fmt.Errorf("reading the state directory's marker: %w", err)
		}
		if string(data) != stateMarkerText {
			return 0, fmt.Errorf("%s is not the marker env up writes, so %s is no state directory env up made: pass --state-dir with a directory that does not exist yet; env up creates it", paths.marker(), dir)
		}
		return stateDirMarked, nil
	case !errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("checking the state directory's marker: %w", err)
	}
	empty, err := isEmptyDir(dir)
	if err != nil {
		return 0, fmt.Errorf("checking the state directory: %w", err)
	}
	if empty {
		return stateDirEmpty, nil
	}
	return 0, fmt.Errorf("%s is not a state directory kubeharness made (it has no %s) and is not empty: env up and env down keep out of it, since env down removes run/ and the kubeconfigs in its state directory; "+
		"pass --state-dir with a directory that does not exist yet (env up creates it) or an empty one of yours; if an older kubeharness ran an environment there, stop it and remove the directory",
		dir, stateMarkerName)
}

// prepareStateDir makes paths.dir a state directory for env up: it creates
// a missing one (mode 0700, parents 0755) or adopts an empty one of the
// caller's, writing the marker, and accepts one that has it. Anything else
// inspectStateDir refuses, and nothing is written into it.
func prepareStateDir(paths envPaths) error {
	kind, err := inspectStateDir(paths)
	if err != nil {
		return err
	}
	if kind == stateDirMissing {
		if err := os.MkdirAll(filepath.Dir(paths.dir), 0o755); err != nil {
			return fmt.Errorf("creating the state directory: %w", err)
		}
		if err := os.Mkdir(paths.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating the state directory: %w", err)
		}
		// Whoever made it, it must pass as an existing one now.
		if kind, err = inspectStateDir(paths); err != nil {
			return err
		}
	}
	if kind == stateDirMarked {
		return nil
	}
	f, err := os.OpenFile(paths.marker(), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("marking the state directory: %w", err)
	}
	if _, err := io.WriteString(f, stateMarkerText); err != nil {
		f.Close()
		return fmt.Errorf("marking the state directory: %w", err)
	}
	return f.Close()
}

// requireStateDir checks paths.dir for down, status, restart and the
// supervisor: found is false when there is no environment's directory
// (none, or an empty one without the marker); any other directory without
// the marker is refused.
func requireStateDir(paths envPaths) (found bool, err error) {
	kind, err := inspectStateDir(paths)
	if err != nil {
		return false, err
	}
	return kind == stateDirMarked, nil
}

// checkOwnFile refuses fi (of path) unless the caller owns it and neither
// group nor others may write it; advice says what to do instead (besides
// chmod go-w, for a mode that lets others write).
func checkOwnFile(path string, fi fs.FileInfo, what, advice string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot tell who owns %s %s", what, path)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s %s belongs to uid %d, not to you (uid %d): its owner could read the admin kubeconfig and swap the files the environment writes there; %s",
			what, path, st.Uid, uid, advice)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s %s is writable by others (mode %s): they could read the admin kubeconfig and swap the files the environment writes there; run chmod go-w %s, or %s",
			what, path, octalMode(fi), path, advice)
	}
	return nil
}

// checkAncestors refuses a state directory below one that everyone may
// write in without the sticky bit (as /tmp has): anyone could rename the
// state directory away and put another in its place.
func checkAncestors(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("state directory %s is below %s, which everyone may write in (mode %s): anyone could swap the state directory for one of theirs; pass --state-dir with a directory elsewhere",
				dir, d, octalMode(fi))
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// isEmptyDir reports whether dir has no entries.
func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// fileType names the type of fi for messages.
func fileType(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "a symbolic link"
	case fi.IsDir():
		return "a directory"
	case fi.Mode().IsRegular():
		return "a regular file"
	}
	return "a special file (" + fi.Mode().Type().String() + ")"
}

// octalMode is fi's permissions as chmod takes them, the sticky bit
// included.
func octalMode(fi fs.FileInfo) string {
	mode := uint32(fi.Mode().Perm())
	if fi.Mode()&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return fmt.Sprintf("%04o", mode)
}

// createFile creates path afresh for writing, mode 0600, and returns it
// open: a new file with a name of its own, renamed to path, so that
// whatever path named before (a file of someone else's, a symbolic link to
// one) is replaced, never written into or followed.
func createFile(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// writeFile writes data to a new file, mode 0600, and renames it to path
// (see createFile): readers see the old content or the new, and nothing
// path named before is written into.
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// ensureDir makes path a directory of the caller's (mode perm) below the
// state directory, refusing a symbolic link or anything else in its place.
func ensureDir(path string, perm os.FileMode) error {
	if err := os.Mkdir(path, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is %s, not a directory: remove it, or run env down", path, fileType(fi))
	}
	return checkOwnFile(path, fi, "directory", "remove it, or run env down")
}
