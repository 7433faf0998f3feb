//go:build unix

package ownership

import (
	"bufio"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// PrivateGroup reports whether gid is a group no one but the user uid
// belongs to: uid's primary group, listed in /etc/group with no member but
// uid, and no other user's primary group in /etc/passwd. Debian and Ubuntu
// give each user such a group and a umask of 002, so that the directories
// go build and mkdir make (a repository's bin/) are writable by it; what
// else a group holds, kubeharness cannot tell, and takes its write bit
// for what it says.
func PrivateGroup(uid, gid uint32) bool {
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
