//go:build unix

package bundle

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// notPrivate says why the directory fi describes is not the caller's
// alone to write ("owned by kh-other (uid 1001)", "writable by others"),
// or "" when it is. The write bit of a group only its owner belongs to
// (ownership.PrivateGroup) lets no one else in, and does not count.
func notPrivate(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "of an owner that cannot be told"
	}
	if uid := int(st.Uid); uid != os.Geteuid() {
		id := strconv.Itoa(uid)
		if u, err := user.LookupId(id); err == nil {
			return fmt.Sprintf("owned by %s (uid %s), not you", u.Username, id)
		}
		return fmt.Sprintf("owned by uid %s, not you", id)
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o002 != 0:
		return fmt.Sprintf("writable by others (mode %s)", perm)
	case perm&0o020 != 0 && !ownership.PrivateGroup(st.Uid, st.Gid):
		return fmt.Sprintf("writable by its group (mode %s)", perm)
	}
	return ""
}
