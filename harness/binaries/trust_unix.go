//go:build unix

package binaries

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
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
		if groupWrites && ownership.PrivateGroup(st.Uid, st.Gid) {
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
