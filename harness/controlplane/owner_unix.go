//go:build unix

package controlplane

import (
	"io/fs"
	"os/user"
	"strconv"
	"syscall"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// fileOwner is the uid and gid owning the file fi describes.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// groupName is gid's name, or the number.
func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}

// userPrivateGroup reports whether gid is a group no one but the user uid
// belongs to: uid's primary group, listed in /etc/group with no member but
// uid, and no other user's primary group in /etc/passwd. Debian and Ubuntu
// give each user such a group and a umask of 002, so that the directories
// mkdir makes (a repository's bin/k8s/.etcd-templates) are writable by it;
// its write bit lets no one else in. What else a group holds (a directory
// service's members) cannot be told here; its write bit counts then.
func userPrivateGroup(uid, gid int) bool {
	return uid >= 0 && gid >= 0 && ownership.PrivateGroup(uint32(uid), uint32(gid))
}
