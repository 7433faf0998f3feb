package testutil

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"testing"
)

// OtherUserName is the second local user tests that play another user on
// the machine give files to (the harness's own tests use the same name).
const OtherUserName = "kh-other"

// OtherUser returns the uid and gid of OtherUserName, adding the user
// (useradd, a system user without a home or a shell) when it is missing.
// Only root can add users or give files away, so the test is skipped,
// saying why, when it runs as anyone else or useradd fails.
func OtherUser(t testing.TB) (uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: it plays a second local user (%s), whom only root can add or give files to", OtherUserName)
	}
	u, err := user.Lookup(OtherUserName)
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OtherUserName).CombinedOutput()
		if err != nil {
			t.Skipf("no user %s, and useradd cannot add it: %v\n%s", OtherUserName, err, out)
		}
		if u, err = user.Lookup(OtherUserName); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}
