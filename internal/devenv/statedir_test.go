package devenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/internal/testutil"
)

// newStateDir is a state directory as env up makes it: the caller's, mode
// 0700, with the marker.
func newStateDir(t *testing.T) envPaths {
	t.Helper()
	paths := envPaths{dir: t.TempDir()}
	markStateDir(t, paths.dir)
	return paths
}

// markStateDir writes env up's marker into dir.
func markStateDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, stateMarkerName), []byte(stateMarkerText), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sentinel is a file whose content a test checks afterwards.
type sentinel struct{ path, content string }

// writeSentinel writes a sentinel file at path (its directory made too).
func writeSentinel(t *testing.T, path string) sentinel {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	s := sentinel{path, "sentinel " + path + "\n"}
	if err := os.WriteFile(s.path, []byte(s.content), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// expectKept fails unless the sentinel is there with its content.
func (s sentinel) expectKept(t *testing.T, after string) {
	t.Helper()
	data, err := os.ReadFile(s.path)
	if err != nil {
		t.Errorf("after %s: %s is gone: %v", after, s.path, err)
	} else if string(data) != s.content {
		t.Errorf("after %s: %s was written into: %q, want %q", after, s.path, data, s.content)
	}
}

// envUpUntilManager runs env up in paths with a manager binary that does
// not exist: a start that stops before it runs anything.
func envUpUntilManager(t *testing.T, paths envPaths) error {
	t.Helper()
	return testutil.WithoutStderr(t, func() error {
		return envUp(context.Background(), paths, Options{Root: t.TempDir(), Manager: "/nonexistent/manager", Timeout: time.Minute})
	})
}

// fakeAssets points $KUBEBUILDER_ASSETS at scripts that report Kubernetes
// 1.37.1 (etcd, kube-apiserver, kube-controller-manager and kubectl), so
// that env up gets as far as starting its supervisor, and returns an
// executable to pass as the manager and the VirtualMachine controller.
func fakeAssets(t *testing.T) (binary string) {
	t.Helper()
	dir := t.TempDir()
	for name, out := range map[string]string{
		"etcd": "etcd Version: 3.6.5", "kube-apiserver": "Kubernetes v1.37.1",
		"kube-controller-manager": "Kubernetes v1.37.1", "kubectl": "Client Version: v1.37.1",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(binaries.AssetsEnv, dir)
	return filepath.Join(dir, "kube-apiserver")
}

// envUpUntilSupervisor runs env up in paths with fakeAssets and no
// supervisor command: it checks the directory, the binaries and kubectl,
// opens env.log, and fails where it would start the supervisor.
func envUpUntilSupervisor(t *testing.T, paths envPaths) error {
	t.Helper()
	binary := fakeAssets(t)
	return testutil.WithoutStderr(t, func() error {
		return envUp(context.Background(), paths, Options{Manager: binary, VMController: binary, VMDriver: "fake", Timeout: time.Minute})
	})
}

// A directory env up did not make is no state directory: down and up
// refuse it, saying why and what to pass instead, and remove nothing
// (--state-dir / would otherwise lose /run).
func TestStateDirWithoutTheMarkerIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, paths envPaths) error
	}{
		{"down", func(t *testing.T, paths envPaths) error {
			return testutil.WithoutStderr(t, func() error { return envDown(paths) })
		}},
		{"up", envUpUntilManager},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := envPaths{dir: t.TempDir()}
			run, kubeconfig := writeSentinel(t, filepath.Join(paths.run(), "x")), writeSentinel(t, paths.kubeconfig())
			err := tc.run(t, paths)
			if err == nil || !strings.Contains(err.Error(), "has no "+stateMarkerName) || !strings.Contains(err.Error(), "pass --state-dir") {
				t.Errorf("env %s in a directory it did not make: %v; want a refusal saying it has no %s and what to pass", tc.name, err, stateMarkerName)
			}
			run.expectKept(t, "env "+tc.name)
			kubeconfig.expectKept(t, "env "+tc.name)
			expectNothingWritten(t, paths, "env "+tc.name)
		})
	}
}

// expectNothingWritten fails when env up or down wrote its lock, state
// file or marker into paths.dir.
func expectNothingWritten(t *testing.T, paths envPaths, after string) {
	t.Helper()
	for _, f := range []string{paths.lock(), paths.state(), paths.marker(), paths.log()} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after %s: %s was written into the refused directory (%v)", after, f, err)
		}
	}
}

// A state directory others may write in, or below one anyone may write
// in, is refused even with the marker: they could read the admin
// kubeconfig or swap what the environment writes.
func TestStateDirOthersCanWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the state directory below base.
		setup func(t *testing.T, base string) string
		want  string
	}{
		{"mode 0777", func(t *testing.T, base string) string { return chmodDir(t, filepath.Join(base, "s"), 0o777) }, "writable by others (mode 0777)"},
		{"mode 0770", func(t *testing.T, base string) string { return chmodDir(t, filepath.Join(base, "s"), 0o770) }, "writable by others (mode 0770)"},
		{"mode 1777", func(t *testing.T, base string) string {
			return chmodDir(t, filepath.Join(base, "s"), 0o777|os.ModeSticky)
		}, "writable by others (mode 1777)"},
		{"below a mode 0777 directory", func(t *testing.T, base string) string {
			chmodDir(t, filepath.Join(base, "shared"), 0o777)
			return chmodDir(t, filepath.Join(base, "shared", "s"), 0o700)
		}, "which everyone may write in (mode 0777)"},
	} {
		for _, cmd := range []string{"down", "up"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				paths := envPaths{dir: tc.setup(t, t.TempDir())}
				markStateDir(t, paths.dir)
				run := writeSentinel(t, filepath.Join(paths.run(), "x"))
				var err error
				if cmd == "down" {
					err = testutil.WithoutStderr(t, func() error { return envDown(paths) })
				} else {
					err = envUpUntilManager(t, paths)
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("env %s: %v; want a refusal saying %q", cmd, err, tc.want)
				}
				run.expectKept(t, "env "+cmd)
				if _, err := os.Lstat(paths.lock()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("env %s wrote %s (%v)", cmd, paths.lock(), err)
				}
			})
		}
	}
}

// chmodDir makes dir with mode (whatever the umask).
func chmodDir(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The report's case: another user prepared a shared directory (mode 0777)
// with a kubeconfig anyone may write (0666) and env.log linked to a file
// of the victim's. env up refuses it: the admin kubeconfig goes nowhere
// near the attacker's file, and the victim's file is not written.
func TestEnvUpRefusesAPreparedSharedDirectory(t *testing.T) {
	paths := envPaths{dir: chmodDir(t, filepath.Join(t.TempDir(), "shared"), 0o777)}
	victims := writeSentinel(t, filepath.Join(t.TempDir(), "victims-file"))
	if err := os.Symlink(victims.path, paths.log()); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeSentinel(t, paths.kubeconfig())
	if err := os.Chmod(kubeconfig.path, 0o666); err != nil {
		t.Fatal(err)
	}
	err := envUpUntilSupervisor(t, paths)
	if err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("env up in a shared directory: %v; want a refusal", err)
	}
	victims.expectKept(t, "env up")
	kubeconfig.expectKept(t, "env up")
}

// A state directory that belongs to another user is refused, however
// tight its mode and with their marker in it: its owner can read what the
// environment writes and swap its files.
func TestStateDirOfAnotherUserIsRefused(t *testing.T) {
	uid, gid := testutil.OtherUser(t)
	for _, cmd := range []string{"down", "up"} {
		t.Run(cmd, func(t *testing.T) {
			paths := envPaths{dir: chmodDir(t, filepath.Join(t.TempDir(), "theirs"), 0o755)}
			markStateDir(t, paths.dir)
			run := writeSentinel(t, filepath.Join(paths.run(), "x"))
			kubeconfig := writeSentinel(t, paths.kubeconfig())
			for _, f := range []string{paths.dir, paths.marker(), paths.run(), run.path, kubeconfig.path} {
				if err := os.Lchown(f, uid, gid); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if cmd == "down" {
				err = testutil.WithoutStderr(t, func() error { return envDown(paths) })
			} else {
				err = envUpUntilManager(t, paths)
			}
			if want := "belongs to uid " + strconv.Itoa(uid) + ", not to you"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("env %s in kh-other's directory: %v; want a refusal saying %q", cmd, err, want)
			}
			run.expectKept(t, "env "+cmd)
			kubeconfig.expectKept(t, "env "+cmd)
			if _, err := os.Lstat(paths.lock()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("env %s wrote %s (%v)", cmd, paths.lock(), err)
			}
		})
	}
}

// In a state directory of the caller's, env up writes its log as a new
// file: a symbolic link already there (env.log to a file elsewhere) is
// replaced, not followed.
func TestEnvUpWritesTheLogAsANewFile(t *testing.T) {
	paths := newStateDir(t)
	elsewhere := writeSentinel(t, filepath.Join(t.TempDir(), "elsewhere"))
	if err := os.Symlink(elsewhere.path, paths.log()); err != nil {
		t.Fatal(err)
	}
	err := envUpUntilSupervisor(t, paths)
	if err == nil || !strings.Contains(err.Error(), "no supervisor command") {
		t.Fatalf("env up: %v; want it to get as far as starting the supervisor", err)
	}
	elsewhere.expectKept(t, "env up")
	expectPrivateFile(t, paths.log())
}

// expectPrivateFile fails unless path is a regular file of mode 0600.
func expectPrivateFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %s, want a regular file of mode 0600", path, fi.Mode())
	}
}

// The admin kubeconfig is a new file of mode 0600, whatever was at its
// name: a kubeconfig anyone may write (0666, here a hard link to a file
// elsewhere, as another user's file would be) is not written into, and a
// symbolic link is not followed.
func TestWriteKubeconfigWritesANewFile(t *testing.T) {
	cp := &controlplane.ControlPlane{Config: &rest.Config{Host: "https://127.0.0.1:6443"}}
	for _, tc := range []struct {
		name  string
		place func(target, path string) error
	}{
		{"a hard link of mode 0666", func(target, path string) error {
			if err := os.Chmod(target, 0o666); err != nil {
				return err
			}
			return os.Link(target, path)
		}},
		{"a symbolic link", os.Symlink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := newStateDir(t)
			elsewhere := writeSentinel(t, filepath.Join(t.TempDir(), "elsewhere"))
			if err := tc.place(elsewhere.path, paths.kubeconfig()); err != nil {
				t.Fatal(err)
			}
			if err := writeKubeconfig(cp, paths.kubeconfig()); err != nil {
				t.Fatal(err)
			}
			elsewhere.expectKept(t, "writing the kubeconfig")
			expectPrivateFile(t, paths.kubeconfig())
			if data, err := os.ReadFile(paths.kubeconfig()); err != nil || !strings.Contains(string(data), "https://127.0.0.1:6443") {
				t.Errorf("the kubeconfig: %q, %v", data, err)
			}
		})
	}
}

// The state file is written to a new file renamed into place: links at the
// state file's name, or at the name its old temporary file had, are not
// followed.
func TestWriteStateWritesANewFile(t *testing.T) {
	paths := newStateDir(t)
	elsewhere := writeSentinel(t, filepath.Join(t.TempDir(), "elsewhere"))
	for _, name := range []string{paths.state(), paths.state() + ".tmp"} {
		if err := os.Symlink(elsewhere.path, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeState(paths, &envState{Phase: "ready"}); err != nil {
		t.Fatal(err)
	}
	elsewhere.expectKept(t, "writing the state")
	if st, err := readState(paths); err != nil || st.Phase != "ready" {
		t.Errorf("the state file: %+v, %v", st, err)
	}
	expectPrivateFile(t, paths.state())
}

// env up makes its state directory: a missing one (with its parents) mode
// 0700, an empty one of the caller's adopted; either gets the marker. One
// with the marker is taken as it is; anything else is refused. Down finds
// no environment in a missing or empty directory, and makes nothing.
func TestPrepareStateDir(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string
	}{
		{"missing", func(*testing.T, string) {}, ""},
		{"empty", func(t *testing.T, dir string) { chmodDir(t, dir, 0o755) }, ""},
		{"marked", func(t *testing.T, dir string) {
			chmodDir(t, dir, 0o700)
			markStateDir(t, dir)
			writeSentinel(t, filepath.Join(dir, "env.log"))
		}, ""},
		{"not empty", func(t *testing.T, dir string) {
			chmodDir(t, dir, 0o700)
			writeSentinel(t, filepath.Join(dir, "notes"))
		}, "has no " + stateMarkerName + ") and is not empty"},
		{"a file", func(t *testing.T, dir string) { writeSentinel(t, dir) }, "is not a directory (a regular file)"},
		{"a marker that is a link", func(t *testing.T, dir string) {
			chmodDir(t, dir, 0o700)
			marker := writeSentinel(t, filepath.Join(t.TempDir(), "marker"))
			if err := os.WriteFile(marker.path, []byte(stateMarkerText), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(marker.path, filepath.Join(dir, stateMarkerName)); err != nil {
				t.Fatal(err)
			}
		}, "is not a regular file (a symbolic link)"},
		{"a marker env up did not write", func(t *testing.T, dir string) {
			chmodDir(t, dir, 0o700)
			writeSentinel(t, filepath.Join(dir, stateMarkerName))
		}, "is not the marker env up writes"},
		{"a writable marker", func(t *testing.T, dir string) {
			chmodDir(t, dir, 0o700)
			markStateDir(t, dir)
			if err := os.Chmod(filepath.Join(dir, stateMarkerName), 0o666); err != nil {
				t.Fatal(err)
			}
		}, "marker " + "%s is writable by others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := envPaths{dir: filepath.Join(t.TempDir(), "a", "b", "envtest")}
			if err := os.MkdirAll(filepath.Dir(paths.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, paths.dir)
			if tc.name == "missing" || tc.name == "empty" {
				if err := testutil.WithoutStderr(t, func() error { return envDown(paths) }); err != nil {
					t.Errorf("env down in a %s directory: %v; want it to find no environment", tc.name, err)
				}
				if _, err := os.Lstat(paths.marker()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("env down marked the directory (%v)", err)
				}
			}
			err := prepareStateDir(paths)
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "%s", paths.marker())
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("prepareStateDir: %v; want an error saying %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("prepareStateDir: %v", err)
			}
			if kind, err := inspectStateDir(paths); err != nil || kind != stateDirMarked {
				t.Errorf("after prepareStateDir: %v, %v; want a marked state directory", kind, err)
			}
			fi, err := os.Stat(paths.dir)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]os.FileMode{"missing": 0o700, "empty": 0o755, "marked": 0o700}[tc.name]; fi.Mode().Perm() != want {
				t.Errorf("state directory mode %s, want %s", fi.Mode().Perm(), want)
			}
		})
	}
}

// The CLI's path: Options.paths spells a state directory that does not
// exist yet as it will be once made, its existing part's links resolved
// (the environment's processes are recognized by that one spelling).
func TestPathsResolvesTheExistingPart(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	resolvedReal, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := Options{StateDir: filepath.Join(link, "new", "envtest")}.paths()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(resolvedReal, "new", "envtest"); paths.dir != want {
		t.Errorf("paths: %s, want %s", paths.dir, want)
	}
}

// the lock is the state directory's own file: a link at its name is not
// followed.
func TestLockStateFollowsNoLink(t *testing.T) {
	paths := newStateDir(t)
	elsewhere := writeSentinel(t, filepath.Join(t.TempDir(), "elsewhere"))
	if err := os.Symlink(elsewhere.path, paths.lock()); err != nil {
		t.Fatal(err)
	}
	lock, _, err := lockState(paths)
	if lock != nil {
		lock.Close()
	}
	if !errors.Is(err, syscall.ELOOP) {
		t.Errorf("lockState through a link: %v; want ELOOP", err)
	}
	elsewhere.expectKept(t, "lockState")
}
