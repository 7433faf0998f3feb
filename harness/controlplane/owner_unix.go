//go:build unix

package controlplane

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid owning the file fi describes.
func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
