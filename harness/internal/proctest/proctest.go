// Package proctest starts child processes for harness tests (each is
// killed, with its process group, when the test ends) and gives them a
// second local user to play another user on the machine.
package proctest

import (
	"bufio"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/process"
)

// Start starts c as the harness starts its processes (harness/process: in
// a process group of its own) and kills that group when the test ends.
func Start(t testing.TB, c process.Command) *process.Process {
	t.Helper()
	p, err := c.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

// StartReading is Start with c's output to a pipe, and returns the
// process and the first line it printed.
func StartReading(t testing.TB, c process.Command) (*process.Process, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Out = w
	p := Start(t, c)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading %s's output: %v", p.Name(), err)
	}
	return p, strings.TrimSpace(line)
}

// StartHelper starts this test binary again with env (NAME=value, the
// first naming the helper) set, for a TestMain or init that turns it into
// a helper process printing a number first (a pid, a port), and returns
// the process and that number.
func StartHelper(t testing.TB, env ...string) (*process.Process, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, line := StartReading(t, process.Command{Path: self, Env: env})
	n, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("helper %v printed %q, not a number", env, line)
	}
	return p, n
}

// OtherUserName is the second local user tests that play another user on
// the machine run as or give files to.
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
