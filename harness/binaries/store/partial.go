package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// partialPattern names a download under way in a store directory
// (os.CreateTemp's pattern); one its process no longer holds was left by
// a run that was killed, and RemoveStalePartials removes it.
const partialPattern = ".download-*.tar.gz"

// CreatePartial creates a file for a download into the store directory
// dir and returns it open and locked until it is closed: while it is, no
// RemoveStalePartials takes it for one a killed run left. Whoever created
// it removes it, then closes it.
func CreatePartial(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, partialPattern)
	if err != nil {
		return nil, err
	}
	if err := lockPartial(f); err != nil {
		_ = os.Remove(f.Name())
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return f, nil
}

// RemoveStalePartials removes the partial downloads (CreatePartial) in dir
// that no process holds any more: those of runs that were killed
// (SIGKILL, a lost terminal) before they could remove them. A download
// under way holds its file's lock from its creation until it is closed,
// and is left alone. Each removal is reported on out.
func RemoveStalePartials(dir string, out io.Writer) {
	paths, _ := filepath.Glob(filepath.Join(dir, partialPattern))
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err == nil && abandoned(f, fi) {
			// Still the file looked at, not a new download by the same name.
			if now, err := os.Lstat(path); err == nil && os.SameFile(fi, now) && os.Remove(path) == nil {
				fmt.Fprintf(out, "removed %s, a partial download (%.1f MB) that a killed run left\n", path, float64(fi.Size())/1e6)
			}
		}
		_ = f.Close()
	}
}
