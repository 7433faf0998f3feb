//go:build !unix

package controlplane

import "io/fs"

// fileOwner reports no owner where files have no uid: the template checks
// then rest on the mode bits alone.
func fileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }
