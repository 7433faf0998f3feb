//go:build unix

package ownership

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// OthersMayWrite says who besides its owner may write the file or
// directory fi describes ("its group (staff)", "others", "its group
// (staff) and others"), or "" when no one may. The write bit of a group
// only its owner belongs to (PrivateGroup) lets no one else in, and does
// not count.
func OthersMayWrite(fi fs.FileInfo) string {
	perm := fi.Mode().Perm()
	groupWrites := perm&0o020 != 0
	group := "its group"
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if groupWrites && PrivateGroup(st.Uid, st.Gid) {
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

// ForeignOwner names the owner of what fi describes when that is neither
// the caller nor root ("kh-other (uid 1001)"), or "" when it is one of
// them.
func ForeignOwner(fi fs.FileInfo) string {
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

// AllowedOwners names those who may own what the caller trusts: "you
// (root)", or "you (alice, uid 1000) or root".
func AllowedOwners() string {
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
