//go:build !unix

package controlplane

import (
	"io/fs"
	"strconv"
)

// fileOwner reports no owner where files have no uid: the template checks
// then rest on the mode bits alone.
func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func groupName(gid int) string { return strconv.Itoa(gid) }

func userPrivateGroup(uid, gid int) bool { return false }
