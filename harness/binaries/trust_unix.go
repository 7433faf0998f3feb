//go:build unix

package binaries

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// writableByOthers says who besides its owner may write the file or
// directory fi describes ("its group (staff)", "others"), or "" when no
// one may: whoever may write a binary can change what kubeharness runs,
// and whoever may write a directory can replace what is in it. The write
// bit of a group only its owner belongs to (userPrivateGroup) lets no one
// else in, and does not count.
func writableByOthers(fi os.FileInfo) string {
	perm := fi.Mode().Perm()
	groupWrites := perm&0o020 != 0
	group := "its group"
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if groupWrites && userPrivateGroup(st.Uid, st.Gid) {
			groupWrites = false
		}
		if g, err := user.LookupGroupId(strconv.FormatUint(uint64(st.Gid), 10)); err == nil {
			group += " (" + g.Name + ")"
		}
	}
	switch {
	case groupWrites && perm&0o002 != 0:
		return group + " and others"
	case groupWrites:
		return group
	case perm&0o002 != 0:
		return "others"
	}
	return ""
}

// userPrivateGroup reports whether gid is a group no one but the user uid
// belongs to: uid's primary group, listed in /etc/group with no member but
// uid, and no other user's primary group in /etc/passwd. Debian and Ubuntu
// give each user such a group and a umask of 002, so that the directories
// go build and mkdir make (a repository's bin/) are writable by it; what
// else a group holds, kubeharness cannot tell, and takes its write bit
// for what it says.
func userPrivateGroup(uid, gid uint32) bool {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil || u.Gid != strconv.FormatUint(uint64(gid), 10) {
		return false
	}
	listed := false
	ok := eachEntry("/etc/group", func(f []string) bool {
		if len(f) < 4 || f[2] != u.Gid {
			return true
		}
		listed = true
		members := strings.Split(f[3], ",")
		return slices.Equal(members, []string{""}) || slices.Equal(members, []string{u.Username})
	})
	if !ok || !listed {
		return false
	}
	return eachEntry("/etc/passwd", func(f []string) bool {
		return len(f) < 4 || f[3] != u.Gid || f[0] == u.Username
	})
}

// eachEntry calls fn with the colon-separated fields of each line of the
// file at path, until fn returns false; it reports whether fn always
// returned true (false too when the file cannot be read).
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

// foreignOwner names the owner of what fi describes when that is neither
// the caller nor root ("kh-other (uid 1001)"), or "" when it is one of
// them.
func foreignOwner(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uid := int(st.Uid); uid == 0 || uid == os.Geteuid() {
		return ""
	}
	id := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return fmt.Sprintf("%s (uid %s)", u.Username, id)
	}
	return "uid " + id
}

// allowedOwners names those who may own a store: "you (root)", or "you
// (alice, uid 1000) or root".
func allowedOwners() string {
	uid := os.Geteuid()
	if uid == 0 {
		return "you (root)"
	}
	name := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username + ", " + name
	}
	return "you (" + name + ") or root"
}
