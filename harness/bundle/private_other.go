//go:build !unix

package bundle

import "io/fs"

// notPrivate is "" where there are no Unix owners and modes to read:
// there, the directory's ACL decides who may write it.
func notPrivate(fs.FileInfo) string { return "" }
