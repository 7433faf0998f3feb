//go:build unix

package binaries

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// otherUser is the second user the tests that need one make files belong
// to.
const otherUser = proctest.OtherUserName

// sentinelStore writes, below a new repository root, a store (root/bin)
// whose version directory of Kubernetes 1.37.1 holds etcd,
// kube-apiserver, kube-controller-manager and kubectl, stamped as Build
// wants them, each of which creates marker when it runs. It returns the
// root, the bin-dir, the version directory and marker.
func sentinelStore(t *testing.T) (root, binDir, dir, marker string) {
	t.Helper()
	root = t.TempDir()
	binDir = filepath.Join(root, "bin")
	dir = StoreDir(binDir, v1371)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(root, "ran")
	for name, report := range map[string]string{
		"etcd":                    "etcd Version: 3.7.3",
		"kube-apiserver":          `Kubernetes v1.37.1\nGitCommit:"0123abc"`,
		"kube-controller-manager": `Kubernetes v1.37.1\nGitCommit:"0123abc"`,
		"kubectl":                 `Client Version: v1.37.1\n"gitCommit": "0123abc"`,
	} {
		writeSentinel(t, filepath.Join(dir, name), report, marker)
	}
	return root, binDir, dir, marker
}

// writeSentinel writes an executable at path that creates marker and
// prints report, as a binary's version flag does.
func writeSentinel(t *testing.T, path, report, marker string) {
	t.Helper()
	script := "#!/bin/sh\n: > '" + marker + "'\nprintf '" + report + "\\n'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// sharedGroup gives path a group others may belong to, and returns how
// errors name it ("its group (kh-other)"): as root otherUser's, else one
// of the caller's groups that is not the caller's own (userPrivateGroup).
// It skips the test when there is none.
func sharedGroup(t *testing.T, path string) string {
	t.Helper()
	gid := -1
	if os.Geteuid() == 0 {
		_, gid = proctest.OtherUser(t)
	} else {
		groups, _ := os.Getgroups()
		for _, g := range groups {
			if !ownership.PrivateGroup(uint32(os.Geteuid()), uint32(g)) {
				gid = g
				break
			}
		}
	}
	if gid < 0 {
		t.Skip("the caller belongs to no group but its own: a group others belong to cannot be tried")
	}
	if err := os.Chown(path, -1, gid); err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		return "its group"
	}
	return "its group (" + g.Name + ")"
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// ran reports whether a sentinel created marker.
func ran(marker string) bool {
	_, err := os.Stat(marker)
	return err == nil
}

// storeUsers are the ways a store is used: each must refuse a store others
// could write before it runs anything there.
var storeUsers = []struct {
	name string
	use  func(ctx context.Context, t *testing.T, root, binDir string) error
}{
	{"Build", func(ctx context.Context, t *testing.T, _, binDir string) error {
		b := &Store{Dir: binDir, Out: &strings.Builder{}, Mode: ModeBuild, build: &builds{}}
		_, err := b.Provide(ctx, v1371, EnvtestComponents...)
		return err
	}},
	{"Find", func(_ context.Context, t *testing.T, root, _ string) error {
		t.Setenv(AssetsEnv, "")
		_, err := Find(root, v1371)
		return err
	}},
	{"FindInstalled", func(ctx context.Context, t *testing.T, _, binDir string) error {
		_, err := FindInstalled(ctx, binDir, versions.Selector{}, EnvtestComponents...)
		return err
	}},
}

// TestStoreOthersCanWriteIsRefused: a store whose root, k8s directory,
// version directory or binaries others may write is refused by every way
// of using it, before anything in it runs; the error names the path, what
// is wrong and the fix. One only its owner may write is used.
func TestStoreOthersCanWriteIsRefused(t *testing.T) {
	cases := []struct {
		name string
		// weaken makes the store writable by others and returns the path
		// and what the error says of it.
		weaken func(t *testing.T, binDir, dir string) (path, what string)
	}{
		{"only you can write it", func(*testing.T, string, string) (string, string) { return "", "" }},
		{"the bin-dir is writable by others", func(t *testing.T, binDir, _ string) (string, string) {
			chmod(t, binDir, 0o757)
			return binDir, " (mode drwxr-xrwx) is writable by others"
		}},
		{"the k8s directory is writable by a group others belong to", func(t *testing.T, binDir, _ string) (string, string) {
			k8s := filepath.Join(binDir, "k8s")
			chmod(t, k8s, 0o775)
			return k8s, " (mode drwxrwxr-x) is writable by " + sharedGroup(t, k8s)
		}},
		{"the version directory is writable by everyone", func(t *testing.T, _, dir string) (string, string) {
			chmod(t, dir, 0o777)
			return dir, " (mode drwxrwxrwx) is writable by " + sharedGroup(t, dir) + " and others"
		}},
		{"a binary is writable by others", func(t *testing.T, _, dir string) (string, string) {
			etcd := filepath.Join(dir, "etcd")
			chmod(t, etcd, 0o757)
			return etcd, " (mode -rwxr-xrwx) is writable by others"
		}},
		{"a binary is writable by a group others belong to", func(t *testing.T, _, dir string) (string, string) {
			apiserver := filepath.Join(dir, "kube-apiserver")
			chmod(t, apiserver, 0o775)
			return apiserver, " (mode -rwxrwxr-x) is writable by " + sharedGroup(t, apiserver)
		}},
	}
	for _, tc := range cases {
		for _, u := range storeUsers {
			t.Run(tc.name+"/"+u.name, func(t *testing.T) {
				root, binDir, dir, marker := sentinelStore(t)
				path, what := tc.weaken(t, binDir, dir)
				err := u.use(context.Background(), t, root, binDir)
				if path == "" {
					if err != nil {
						t.Fatalf("a store only its owner may write: %v", err)
					}
					if !ran(marker) {
						t.Fatal("the store's binaries never ran: the test's marker proves nothing")
					}
					return
				}
				wantErr(t, err, "refusing the binaries store "+binDir+": others could change the binaries kubeharness runs: ",
					path+what, "run `chmod go-w "+path+"`", "another --bin-dir")
				if ran(marker) {
					t.Error("a binary of the refused store ran")
				}
			})
		}
	}
}

// TestStoreOfAnotherUserIsRefused: a store directory or binary that
// belongs to another user (a real one), though only that user may write
// it, is refused too: that user could change what runs.
func TestStoreOfAnotherUserIsRefused(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	for _, give := range []func(binDir, dir string) string{
		func(_, dir string) string { return dir },
		func(binDir, _ string) string { return binDir },
		func(_, dir string) string { return filepath.Join(dir, "kube-apiserver") },
	} {
		for _, u := range storeUsers {
			root, binDir, dir, marker := sentinelStore(t)
			path := give(binDir, dir)
			if err := os.Chown(path, uid, gid); err != nil {
				t.Fatal(err)
			}
			err := u.use(context.Background(), t, root, binDir)
			wantErr(t, err, "refusing the binaries store "+binDir, path+" belongs to "+otherUser+" (uid "+strconv.Itoa(uid)+"), not to you (root)",
				"remove "+path+" to have the binaries provided again", "another --bin-dir")
			if ran(marker) {
				t.Errorf("%s: a binary of the refused store ran", u.name)
			}
		}
	}
}

// TestAssetsOthersCanWriteAreRefused: $KUBEBUILDER_ASSETS, a directory
// the user names, is refused when anyone but its owner may write it or its
// binaries, by every way of using it (TestAssetsOfAnotherUser: and when its
// owner is neither the user nor root).
func TestAssetsOthersCanWriteAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		mode os.FileMode
		what string
	}{
		{"the directory", "", 0o757, " (mode drwxr-xrwx) is writable by others"},
		{"a binary", "kube-apiserver", 0o775, " (mode -rwxrwxr-x) is writable by %s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, assets, marker := sentinelStore(t)
			t.Setenv(AssetsEnv, assets)
			path := filepath.Join(assets, tc.file)
			chmod(t, path, tc.mode)
			if strings.Contains(tc.what, "%s") {
				tc.what = fmt.Sprintf(tc.what, sharedGroup(t, path))
			}
			refused := "refusing the control-plane binaries from KUBEBUILDER_ASSETS " + assets + ": others could change the binaries kubeharness runs: "
			r := &versions.Resolver{Lock: testLock(), Proxy: workplaceProxy()}
			_, _, err := Locate(context.Background(), r, t.TempDir(), versions.Selector{}, DefaultComponents...)
			wantErr(t, err, refused, path+tc.what, "run `chmod go-w "+path+"`", "`kubeharness bins use VERSION -p PATH`")
			_, err = Find(t.TempDir(), v1371)
			wantErr(t, err, refused, path+tc.what)
			var out strings.Builder
			st := Store{Dir: t.TempDir(), Out: &out}
			_, _, err = st.Use(context.Background(), versions.Exactly(v1371), UseOptions{Components: DefaultComponents, UseEnv: true, InstalledOnly: true})
			if err == nil || !strings.Contains(out.String(), "not using $KUBEBUILDER_ASSETS: "+refused) {
				t.Errorf("Use took $%s (%v):\n%s", AssetsEnv, err, out.String())
			}
			if ran(marker) {
				t.Error("a binary of the refused directory ran")
			}
		})
	}
}

// TestAssetsOfAnotherUser: a $KUBEBUILDER_ASSETS that belongs to another
// user is refused though only that user may write it: that user could
// change what runs. One rule for every binary the harness runs: the
// caller's or root's, and no one else may write them.
func TestAssetsOfAnotherUser(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	_, _, assets, marker := sentinelStore(t)
	for _, path := range []string{assets, filepath.Join(assets, "etcd"), filepath.Join(assets, "kube-apiserver")} {
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(AssetsEnv, assets)
	_, err := Find(t.TempDir(), v1371)
	wantErr(t, err, "refusing the control-plane binaries from KUBEBUILDER_ASSETS "+assets,
		assets+" belongs to "+otherUser+" (uid "+strconv.Itoa(uid)+"), not to you (root)",
		filepath.Join(assets, "etcd")+" belongs to "+otherUser)
	if _, err := CheckBinaries(context.Background(), assets, DefaultComponents...); err == nil || !strings.Contains(err.Error(), "belongs to "+otherUser) {
		t.Errorf("CheckBinaries of another user's directory: %v", err)
	}
	if ran(marker) {
		t.Error("a binary of another user ran")
	}
}

// TestReuseStoreOthersCanWriteIsNotReused: a Reuse store others may write
// is neither run nor linked from; Build says so and provides the binaries
// otherwise.
func TestReuseStoreOthersCanWriteIsNotReused(t *testing.T) {
	_, reuse, src, marker := sentinelStore(t)
	chmod(t, src, 0o757)
	bs := &builds{}
	var out strings.Builder
	bs.out = &out
	b := &Store{Root: testRoot(t), Dir: t.TempDir(), Reuse: reuse, Out: &out, Mode: ModeBuild, build: bs}
	dir, err := b.Provide(context.Background(), v1371, Etcd, KubeAPIServer)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out.String())
	}
	wantLines(t, out.String(), "etcd: not reusing "+filepath.Join(src, "etcd")+" (refusing the binaries store "+reuse+": ",
		src+" (mode drwxr-xrwx) is writable by others; run `chmod go-w "+src+"`")
	if ran(marker) {
		t.Error("a binary of the Reuse store others may write ran")
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if !strings.Contains(readFile(t, filepath.Join(dir, name)), builtMarker) {
			t.Errorf("%s was not built", name)
		}
	}
}

// TestUserPrivateGroupMayWrite: a store writable by a group no one but its
// owner belongs to, as Debian's and Ubuntu's umask of 002 leaves the
// directories go build and mkdir make, is used.
func TestUserPrivateGroupMayWrite(t *testing.T) {
	root, binDir, dir, marker := sentinelStore(t)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if !ownership.PrivateGroup(st.Uid, st.Gid) {
		t.Skipf("the group of the files this test makes (gid %d) is not the caller's own", st.Gid)
	}
	for _, path := range []string{binDir, filepath.Join(binDir, "k8s"), dir, filepath.Join(dir, "etcd")} {
		chmod(t, path, 0o775)
	}
	for _, u := range storeUsers {
		if err := u.use(context.Background(), t, root, binDir); err != nil {
			t.Errorf("%s: %v", u.name, err)
		}
	}
	if !ran(marker) {
		t.Error("the store's binaries never ran")
	}
}
