//go:build unix

package envtest_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/envtest"
	"github.com/kubeharness/kubeharness/harness/internal/proctest"
)

// These tests play another local user who planted an etcd and a
// kube-apiserver where the drop-in looks for them: each is a script that
// creates a marker file when it runs, so that they need no real
// control-plane binaries. Start must refuse before any of them runs.

// plant writes etcd and kube-apiserver into dir (made when missing), each
// a script that creates marker when it runs.
func plant(t *testing.T, dir, marker string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := "#!/bin/sh\ntouch '" + marker + "'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// noSources clears every other place the drop-in takes binaries from and
// keeps its caches in this test's own directories.
func noSources(t *testing.T) {
	t.Helper()
	// Unset, not empty: controller-runtime's lookup takes a variable set
	// to "" for a path.
	for _, v := range []string{"KUBEBUILDER_ASSETS", "TEST_ASSET_ETCD", "TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_KUBECTL", envtest.EnvStock, "USE_EXISTING_CLUSTER", "XDG_DATA_HOME"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// startRefused starts env and wants it refused with an error that says
// each of want, and no planted binary run.
func startRefused(t *testing.T, env *envtest.Environment, marker string, want ...string) {
	t.Helper()
	env.ControlPlaneStartTimeout = 5 * time.Second
	cfg, err := env.Start()
	if err == nil {
		_ = env.Stop()
		t.Fatalf("Start started a control plane (%s) from binaries others could change", cfg.Host)
	}
	t.Logf("refused: %v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q:\n%v", w, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a planted binary ran")
	}
}

// TestStartRunsPrivateBinaries: binaries only this user can change pass
// the check and run (and, being scripts, fail to start a control plane):
// the marker the refusals below wait for in vain proves something.
func TestStartRunsPrivateBinaries(t *testing.T) {
	noSources(t)
	dir, marker := filepath.Join(t.TempDir(), "assets"), filepath.Join(t.TempDir(), "ran")
	plant(t, dir, marker)
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	env := &envtest.Environment{ControlPlaneStartTimeout: 5 * time.Second}
	if _, err := env.Start(); err == nil {
		_ = env.Stop()
		t.Fatal("scripts started a control plane")
	} else if strings.Contains(err.Error(), "others could change") {
		t.Fatalf("binaries only this user can change were refused: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the binaries did not run: the refusals' missing marker proves nothing")
	}
}

// TestStartRefusesAssetsOthersMayWrite: a KUBEBUILDER_ASSETS directory, or
// a binary in it, that others may write is refused, naming the path and
// the fix.
func TestStartRefusesAssetsOthersMayWrite(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		mode       os.FileMode
		what       string
	}{
		{"the directory", "", 0o777, " (mode drwxrwxrwx) is writable by "},
		{"the directory, sticky", "", 0o777 | os.ModeSticky, " (mode dtrwxrwxrwx) is writable by "},
		{"etcd", "etcd", 0o757, " (mode -rwxr-xrwx) is writable by others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noSources(t)
			dir, marker := filepath.Join(t.TempDir(), "assets"), filepath.Join(t.TempDir(), "ran")
			plant(t, dir, marker)
			path := filepath.Join(dir, tc.file)
			chmod(t, path, tc.mode)
			t.Setenv("KUBEBUILDER_ASSETS", dir)
			startRefused(t, &envtest.Environment{}, marker,
				"envtest: refusing the control-plane binaries from KUBEBUILDER_ASSETS "+dir+": others could change the binaries kubeharness runs: ",
				path+tc.what, "run `chmod go-w "+path+"`", "`kubeharness bins use VERSION -p PATH`, PATH a directory only you can write")
		})
	}
}

// TestStartRefusesAssetsBelowADirectoryOthersMayWrite: a private
// KUBEBUILDER_ASSETS below a directory others may write (without the
// sticky bit) is refused: they can rename it and put their own in its
// place.
func TestStartRefusesAssetsBelowADirectoryOthersMayWrite(t *testing.T) {
	noSources(t)
	shared, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	dir := filepath.Join(shared, "assets")
	plant(t, dir, marker)
	chmod(t, shared, 0o777)
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	startRefused(t, &envtest.Environment{}, marker, "KUBEBUILDER_ASSETS "+dir, shared+" (mode drwxrwxrwx) is writable by ", "chmod go-w "+shared)
}

// TestStartRefusesAStoreBelowAHomeOthersMayWrite: the store `kubeharness
// bins use` fills, below a home directory others may write (a container's
// HOME set to a shared directory), is refused.
func TestStartRefusesAStoreBelowAHomeOthersMayWrite(t *testing.T) {
	if _, err := os.Stat("/usr/local/kubebuilder/bin/kube-apiserver"); err == nil {
		t.Skip("/usr/local/kubebuilder/bin holds binaries: the drop-in takes them before the store")
	}
	noSources(t)
	home, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	t.Setenv("HOME", home)
	version := filepath.Join(home, ".local", "share", "kubebuilder-envtest", "k8s", "1.37.1-"+runtime.GOOS+"-"+runtime.GOARCH)
	plant(t, version, marker)
	chmod(t, home, 0o777)
	startRefused(t, &envtest.Environment{}, marker, "refusing the binaries store "+filepath.Join(home, ".local", "share", "kubebuilder-envtest"), home+" (mode drwxrwxrwx) is writable by ", "chmod go-w "+home,
		"export KUBEBUILDER_ASSETS to the directory it prints")
}

// TestStartRefusesAStoreOfAnotherUser: a version directory of the store
// that another user owns is refused, though only that user may write it.
func TestStartRefusesAStoreOfAnotherUser(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	if _, err := os.Stat("/usr/local/kubebuilder/bin/kube-apiserver"); err == nil {
		t.Skip("/usr/local/kubebuilder/bin holds binaries: the drop-in takes them before the store")
	}
	noSources(t)
	home, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	t.Setenv("HOME", home)
	version := filepath.Join(home, ".local", "share", "kubebuilder-envtest", "k8s", "1.37.1-"+runtime.GOOS+"-"+runtime.GOARCH)
	plant(t, version, marker)
	if err := os.Chown(version, uid, gid); err != nil {
		t.Fatal(err)
	}
	startRefused(t, &envtest.Environment{}, marker, "refusing the binaries store ",
		version+" belongs to "+proctest.OtherUserName+" (uid "+strconv.Itoa(uid)+"), not to you (root)")
}

// TestStartRefusesATestAssetOfAnotherUser: TEST_ASSET_ETCD naming an etcd
// another user owns is refused, though only that user may write it.
func TestStartRefusesATestAssetOfAnotherUser(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	noSources(t)
	dir, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	plant(t, dir, marker)
	etcd := filepath.Join(dir, "etcd")
	if err := os.Chown(etcd, uid, gid); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_ASSET_ETCD", etcd)
	t.Setenv("TEST_ASSET_KUBE_APISERVER", filepath.Join(dir, "kube-apiserver"))
	startRefused(t, &envtest.Environment{}, marker, "refusing the control-plane binaries from TEST_ASSET_ETCD "+etcd,
		etcd+" belongs to "+proctest.OtherUserName+" (uid "+strconv.Itoa(uid)+")", "point TEST_ASSET_ETCD at the etcd in the directory it prints")
}

// TestStartRefusesTestAssetsOthersMayWrite: TEST_ASSET_ETCD or a
// ControlPlane's Path naming a binary others may write, or a link to one
// in a directory others may write, is refused; a link only this user
// could make to such a binary does not make it private.
func TestStartRefusesTestAssetsOthersMayWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil makes what etcd runs writable by others and returns the
		// path the error names.
		spoil func(t *testing.T, etcd string) string
		// set names etcd to the drop-in.
		set  func(t *testing.T, env *envtest.Environment, etcd string)
		from string
	}{
		{"TEST_ASSET_ETCD", func(t *testing.T, etcd string) string {
			chmod(t, etcd, 0o777)
			return etcd
		}, func(t *testing.T, _ *envtest.Environment, etcd string) { t.Setenv("TEST_ASSET_ETCD", etcd) }, "TEST_ASSET_ETCD"},
		{"ControlPlane.Etcd.Path", func(t *testing.T, etcd string) string {
			chmod(t, filepath.Dir(etcd), 0o777)
			return filepath.Dir(etcd)
		}, func(_ *testing.T, env *envtest.Environment, etcd string) {
			env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}
		}, "ControlPlane.Etcd.Path"},
		{"a link to a directory others may write", func(t *testing.T, etcd string) string {
			shared := t.TempDir()
			chmod(t, shared, 0o777)
			if err := os.Rename(etcd, filepath.Join(shared, "etcd")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(shared, "etcd"), etcd); err != nil {
				t.Fatal(err)
			}
			return shared
		}, func(t *testing.T, _ *envtest.Environment, etcd string) { t.Setenv("TEST_ASSET_ETCD", etcd) }, "TEST_ASSET_ETCD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noSources(t)
			etcdDir, apiDir, marker := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "ran")
			plant(t, etcdDir, marker)
			plant(t, apiDir, marker)
			etcd := filepath.Join(etcdDir, "etcd")
			path := tc.spoil(t, etcd)
			env := &envtest.Environment{}
			tc.set(t, env, etcd)
			// kube-apiserver from another directory: the drop-in would
			// link the two.
			t.Setenv("TEST_ASSET_KUBE_APISERVER", filepath.Join(apiDir, "kube-apiserver"))
			startRefused(t, env, marker, "refusing the control-plane binaries from "+tc.from+" "+etcd, path+" (mode ", "run `chmod go-w "+path+"`")
		})
	}
}

// TestStartRefusesAKubeAPIServerLinkedFromADirectoryOthersMayWrite:
// binaries named in two directories run from a directory of links; a
// kube-apiserver there whose directory others may write is refused before
// the links are made or anything runs.
func TestStartRefusesAKubeAPIServerLinkedFromADirectoryOthersMayWrite(t *testing.T) {
	noSources(t)
	etcdDir, apiDir, marker := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "ran")
	plant(t, etcdDir, marker)
	plant(t, apiDir, marker)
	chmod(t, apiDir, 0o777)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("TEST_ASSET_ETCD", filepath.Join(etcdDir, "etcd"))
	t.Setenv("TEST_ASSET_KUBE_APISERVER", filepath.Join(apiDir, "kube-apiserver"))
	startRefused(t, &envtest.Environment{}, marker, "TEST_ASSET_KUBE_APISERVER", apiDir+" (mode drwxrwxrwx)")
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("Start left %s in %s", entries[0].Name(), tmp)
	}
}

// TestStartRefusesStockBinariesOthersMayWrite: KUBEHARNESS_ENVTEST=stock
// hands Start to controller-runtime, which runs what its own lookup names
// (here KUBEBUILDER_ASSETS): that is checked first too.
func TestStartRefusesStockBinariesOthersMayWrite(t *testing.T) {
	noSources(t)
	dir, marker := filepath.Join(t.TempDir(), "assets"), filepath.Join(t.TempDir(), "ran")
	plant(t, dir, marker)
	chmod(t, dir, 0o777)
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	t.Setenv(envtest.EnvStock, "stock")
	startRefused(t, &envtest.Environment{}, marker, "controller-runtime's envtest would run", dir+" (mode drwxrwxrwx)", "chmod go-w "+dir)
}

// TestStartRefusesDownloadedBinariesOthersMayWrite: with
// DownloadBinaryAssets, controller-runtime runs the binaries a download
// left in BinaryAssetsDirectory before without downloading again: a
// directory others may write is refused first.
func TestStartRefusesDownloadedBinariesOthersMayWrite(t *testing.T) {
	noSources(t)
	dir, marker := filepath.Join(t.TempDir(), "assets"), filepath.Join(t.TempDir(), "ran")
	version := filepath.Join(dir, "1.37.1-"+runtime.GOOS+"-"+runtime.GOARCH)
	plant(t, version, marker)
	if err := os.WriteFile(filepath.Join(version, "kubectl"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, 0o777)
	env := &envtest.Environment{DownloadBinaryAssets: true, DownloadBinaryAssetsVersion: "v1.37.1", BinaryAssetsDirectory: dir}
	startRefused(t, env, marker, "refusing the control-plane binaries from BinaryAssetsDirectory "+dir, dir+" (mode drwxrwxrwx)", "chmod go-w "+dir)
}
