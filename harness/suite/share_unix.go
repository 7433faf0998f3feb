//go:build unix

package suite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// dirFlags open a directory on the way to a shared file: a symbolic link
// is refused (O_NOFOLLOW), and so is anything that is not a directory.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// writeShared makes a directory of its own, mode 0700, in the temporary
// directory and writes content to a new file name in it, mode 0600; it
// returns the file's path, free of symbolic links, and a function that
// removes both.
func writeShared(name string, content []byte) (path string, remove func() error, err error) {
	// ReadShared refuses a path through a symbolic link; resolve those of
	// the temporary directory itself (macOS's /var is /private/var).
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp(tmp, shareDirPrefix)
	if err != nil {
		return "", nil, err
	}
	removeDir := func() error { return os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			_ = removeDir()
		}
	}()
	dfd, err := openDir(dir)
	if err != nil {
		return "", nil, err
	}
	defer unix.Close(dfd)
	// MkdirTemp's 0700 goes through the umask; make the mode exact.
	if err := unix.Fchmod(dfd, 0o700); err != nil {
		return "", nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := checkPrivate(dfd, dir, unix.S_IFDIR, 0o700); err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, name)
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("creating %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	err = unix.Fchmod(fd, 0o600)
	if err == nil {
		_, err = f.Write(content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return path, removeDir, nil
}

// readPrivate reads the file at the absolute path path, after checking
// that it and its directory are this user's alone: the directory of mode
// 0700, the file a regular one of mode 0600. Each component of the path is
// opened without following a symbolic link, and the checks are made on
// what was opened, so that nobody can swap a component between the checks
// and the read.
func readPrivate(path string) ([]byte, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	dfd, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	if err := checkPrivate(dfd, dir, unix.S_IFDIR, 0o700); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO in the place of the file must not hang the open.
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if isRefusedLink(err) {
			return nil, notFollowed(dfd, name, path, err)
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := checkPrivate(fd, path, unix.S_IFREG, 0o600); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// openDir opens the directory at the absolute, clean path dir one
// component at a time from the root, following no symbolic link, and
// returns its descriptor.
func openDir(dir string) (int, error) {
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, fmt.Errorf("opening /: %w", err)
	}
	walked := "/"
	for _, c := range strings.Split(dir, "/") {
		if c == "" {
			continue
		}
		next := filepath.Join(walked, c)
		if c == "." || c == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: a path to a shared file has no . or .. in it", dir)
		}
		nfd, err := unix.Openat(fd, c, dirFlags, 0)
		if err != nil {
			if isRefusedLink(err) {
				err = notFollowed(fd, c, next, err)
			} else {
				err = fmt.Errorf("opening %s: %w", next, err)
			}
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd, walked = nfd, next
	}
	return fd, nil
}

// isRefusedLink tells whether err is how openat refuses a symbolic link
// under O_NOFOLLOW (ELOOP; EMLINK on FreeBSD) or, with O_DIRECTORY,
// anything that is not a directory (ENOTDIR).
func isRefusedLink(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENOTDIR)
}

// notFollowed says what stood at name in the directory dirfd when openat
// refused it: a symbolic link, or something that is not a directory.
func notFollowed(dirfd int, name, path string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK { //nolint:unconvert // Mode is uint16 on some systems
		return fmt.Errorf("%s is a symbolic link: a shared file is read only by a path without one, so that nobody can redirect it", path)
	}
	return fmt.Errorf("opening %s: %w", path, err)
}

// checkPrivate checks, on the descriptor fd of path, that it is of the
// kind (S_IFDIR, S_IFREG), has exactly the permissions perm and is owned
// by this user.
func checkPrivate(fd int, path string, kind, perm uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mode := uint32(st.Mode) //nolint:unconvert // Mode is uint16 on some systems
	if mode&unix.S_IFMT != kind || mode&0o7777 != perm || int64(st.Uid) != int64(os.Getuid()) {
		return fmt.Errorf("%s holds credentials but has mode %s and owner uid %d: it must have mode %s and be owned by uid %d, as ShareFile makes it",
			path, fileMode(mode), st.Uid, fileMode(kind|perm), os.Getuid())
	}
	return nil
}

// fileMode turns a stat mode into an os.FileMode, for messages.
func fileMode(m uint32) os.FileMode {
	fm := os.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		fm |= os.ModeDir
	case unix.S_IFLNK:
		fm |= os.ModeSymlink
	case unix.S_IFIFO:
		fm |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		fm |= os.ModeSocket
	case unix.S_IFCHR:
		fm |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		fm |= os.ModeDevice
	default:
		fm |= os.ModeIrregular
	}
	for bit, flag := range map[uint32]os.FileMode{unix.S_ISUID: os.ModeSetuid, unix.S_ISGID: os.ModeSetgid, unix.S_ISVTX: os.ModeSticky} {
		if m&bit != 0 {
			fm |= flag
		}
	}
	return fm
}
