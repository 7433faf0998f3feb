// Package safefile reads and writes the files of harness/coverage: it reads
// files whose content someone else may have made only as a regular file,
// never through a symbolic link, and at most a given size, so that a named
// pipe, a device or a huge file cannot hang or exhaust the reader (Read);
// and writes a file whole or not at all, so that a reader never sees it
// half written (Write). It uses the standard library alone, so that
// packages built into the binaries under test (harness/coverage/flush)
// can use it.
package safefile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Read returns the content of name, a regular file (not a symbolic link)
// of at most limit bytes; anything else is an error that says what name
// is, or one that wraps the file system's (fs.ErrNotExist for a file that
// is not there).
func Read(name string, limit int64) ([]byte, error) {
	if fi, err := os.Lstat(name); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Checked again on what was opened: the name may have been replaced
	// between the two.
	if !st.Mode().IsRegular() || st.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", name, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// Write writes data to name with mode, whole or not at all: through a
// file of its own in the same directory, renamed over name once complete.
func Write(name string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
