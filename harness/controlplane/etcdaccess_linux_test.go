package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// etcdDialHelperEnv turns this test binary into a helper that dials
// "NETWORK ADDRESS" (tcp or unix), tries to read keys of etcd there and
// prints what happened, run as another user by
// TestEtcdServesNoOtherLocalUser.
const etcdDialHelperEnv = "KUBEHARNESS_TEST_ETCD_DIAL"

// otherUser is the local user the test runs the helper as when it runs as
// root; it is made (without a home or login) when missing.
const otherUser = proctest.OtherUserName

func TestMain(m *testing.M) {
	if target := os.Getenv(etcdDialHelperEnv); target != "" {
		fmt.Println(dialEtcd(target))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dialEtcd connects to target ("NETWORK ADDRESS") and asks etcd's JSON
// gateway how many keys lie below /registry/. It answers "EACCES: …" when
// the connection is refused for lack of permission.
func dialEtcd(target string) string {
	network, addr, _ := strings.Cut(target, " ")
	conn, err := net.DialTimeout(network, addr, 5*time.Second)
	if errors.Is(err, syscall.EACCES) {
		return "EACCES: " + err.Error()
	}
	if err != nil {
		return "dial failed: " + err.Error()
	}
	defer conn.Close()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil },
	}}
	// "/registry/" to "/registry0", base64: every Kubernetes object.
	resp, err := hc.Post("http://etcd/v3/kv/range", "application/json",
		strings.NewReader(`{"key":"L3JlZ2lzdHJ5Lw==","range_end":"L3JlZ2lzdHJ5MA==","count_only":true}`))
	if err != nil {
		return "connected, request failed: " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Sprintf("connected and read: %s %s", resp.Status, bytes.TrimSpace(body))
}

// TestEtcdServesNoOtherLocalUser starts a tuned control plane and shows
// that nothing of its etcd is reachable by another local user: no TCP
// listener at all, and unix sockets only in directories of mode 0700
// owned by this user. Run as root, it also runs a helper as another user
// (kh-other, made when missing) that tries every listener etcd has and must
// be refused with EACCES.
func TestEtcdServesNoOtherLocalUser(t *testing.T) {
	dir, root, _, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	cp, err := Start(Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	pid := cp.PIDs()["etcd"]

	listeners := procListeners(t, pid)
	if len(listeners) == 0 {
		t.Fatalf("found no listener of etcd (pid %d)", pid)
	}
	for _, l := range listeners {
		t.Logf("etcd listens on %s %s", l.network, l.addr)
		switch {
		case l.network == "tcp":
			t.Errorf("etcd listens on TCP %s: every local user can reach it", l.addr)
		case strings.HasPrefix(l.addr, "@"):
			t.Errorf("etcd listens on the abstract unix socket %s: every local user can reach it", l.addr)
		default:
			dir := filepath.Dir(l.addr)
			fi, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode()&os.ModeType != os.ModeDir || fi.Mode().Perm() != 0o700 || int(st.Uid) != os.Geteuid() {
				t.Errorf("etcd's socket %s is in %s (%s, uid %d): want a directory of mode 0700 owned by uid %d", l.addr, dir, fi.Mode(), st.Uid, os.Geteuid())
			}
		}
	}
	// The API server reads what the template wrote into etcd.
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(cp.Config.Host + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the default namespace: %s", resp.Status)
	}

	if os.Geteuid() != 0 {
		t.Skipf("not root: cannot run a helper as another user to dial etcd (the checks above passed)")
	}
	uid, gid := ensureOtherUser(t)
	helper := helperForOthers(t)
	for _, l := range listeners {
		cmd := exec.Command(helper)
		cmd.Env = []string{etcdDialHelperEnv + "=" + l.network + " " + l.addr}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper as %s: %v\n%s", otherUser, err, out)
		}
		if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "EACCES") {
			t.Errorf("%s (uid %d) dialing etcd's %s %s: %s; want permission denied", otherUser, uid, l.network, l.addr, got)
		} else {
			t.Logf("%s dialing etcd's %s %s: %s", otherUser, l.network, l.addr, got)
		}
	}
}

// listener is a socket a process listens on: tcp with host:port, or unix
// with a path ("@name" for an abstract one).
type listener struct{ network, addr string }

// procListeners are the TCP and unix sockets pid listens on, from /proc.
func procListeners(t *testing.T, pid int) []listener {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ls []listener
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, f := range procTable(t, table) {
			// local_address rem_address st … inode; st 0A is LISTEN.
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				ls = append(ls, listener{"tcp", procTCPAddr(t, f[1])})
			}
		}
	}
	for _, f := range procTable(t, "/proc/net/unix") {
		// Num RefCount Protocol Flags Type St Inode [Path]; St 01 with
		// flag __SO_ACCEPTCON (00010000) is listening.
		if len(f) > 7 && f[3] == "00010000" && inodes[f[6]] {
			path := f[7]
			if !strings.HasPrefix(path, "@") && !filepath.IsAbs(path) {
				path = filepath.Join(cwd, path)
			}
			ls = append(ls, listener{"unix", path})
		}
	}
	return ls
}

// procTable is a /proc/net table's rows, split into fields, without the
// header.
func procTable(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan()
	for sc.Scan() {
		rows = append(rows, strings.Fields(sc.Text()))
	}
	return rows
}

// procTCPAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080"
// (and IPv6's 32 hex digits likewise).
func procTCPAddr(t *testing.T, s string) string {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	var ip net.IP
	for i := 0; i+8 <= len(hexIP); i += 8 {
		word, err := strconv.ParseUint(hexIP[i:i+8], 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		// Each 32-bit word is in host (little-endian) order.
		ip = append(ip, byte(word), byte(word>>8), byte(word>>16), byte(word>>24))
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}

// ensureOtherUser is proctest.OtherUser's uid and gid as the kernel's
// credentials take them.
func ensureOtherUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	u, g := proctest.OtherUser(t)
	return uint32(u), uint32(g)
}

// helperForOthers is this test binary where another user may run it: go
// test keeps it in a directory only its builder can enter.
func helperForOthers(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "kubeharness-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "helper")
	if err := os.Link(self, path); err != nil {
		if err := copyFile(self, path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
