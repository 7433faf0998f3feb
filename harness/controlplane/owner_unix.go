//go:build unix

package controlplane

import (
	"bufio"
	"io/fs"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Gid != strconv.Itoa(gid) {
		return false
	}
	listed := false
	if !eachEntry("/etc/group", func(f []string) bool {
		if len(f) < 4 || f[2] != u.Gid {
			return true
		}
		listed = true
		members := strings.Split(f[3], ",")
		return slices.Equal(members, []string{""}) || slices.Equal(members, []string{u.Username})
	}) || !listed {
		return false
	}
	return eachEntry("/etc/passwd", func(f []string) bool {
		return len(f) < 4 || f[3] != u.Gid || f[0] == u.Username
	})
}

// eachEntry calls fn with the colon-separated fields of each line of the
// file at path until fn returns false, and reports whether it never did
// (false too when the file cannot be read).
func eachEntry(path string, fn func(fields []string) bool) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !fn(strings.Split(line, ":")) {
			return false
		}
	}
	return sc.Err() == nil
}
