package suite_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeharness/kubeharness/harness/suite"
)

// The API servers of the attacks below: the suite's own, and the cluster
// someone else would like the suite to run against.
const (
	suiteServer = "https://127.0.0.1:6443"
	realServer  = "https://prod.example.com:6443"
)

// A kubeconfig naming server, as a developer's ~/.kube/config does.
func kubeconfigFor(t *testing.T, server string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "developer-token"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// handleFields returns the token and the path of a handle ShareFile
// returned; a bare path has no token and names itself.
func handleFields(shared string) (token, path string) {
	if f := strings.SplitN(shared, " ", 3); len(f) == 3 {
		return f[1], f[2]
	}
	return "", shared
}

// look-alike is what someone who read the handle off Ginkgo's parallel
// server would put in a file of their own: the handle's token, then a
// kubeconfig of their choosing.
func lookAlike(t *testing.T, shared string) []byte {
	token, _ := handleFields(shared)
	header := ""
	if token != "" {
		header = "kubeharness-share/v1 " + token + "\n"
	}
	return append([]byte(header), kubeconfigFor(t, realServer)...)
}

// share shares a kubeconfig naming the suite's server from a temporary
// directory of the test's own.
func share(t *testing.T, tmp string) string {
	t.Helper()
	t.Setenv("TMPDIR", tmp)
	shared, remove, err := suite.ShareFile("kubeconfig", kubeconfigFor(t, suiteServer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove() })
	return shared
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// Ginkgo's parallel server listens on loopback and any user can send
// process 2 what it passes on from process 1. Whatever arrives, Connect
// reads only the file ShareFile wrote for this run.
func TestConnectRefusesWhatShareFileDidNotReturn(t *testing.T) {
	shared := share(t, t.TempDir())
	token, path := handleFields(shared)

	// The developer's own kubeconfig: this user's, in a 0700 directory.
	home := t.TempDir()
	mkdir(t, filepath.Join(home, ".kube"), 0o700)
	devConfig := filepath.Join(home, ".kube", "config")
	writeFile(t, devConfig, kubeconfigFor(t, realServer), 0o600)
	// A directory of this user's named like the ones ShareFile makes,
	// holding a kubeconfig without the token.
	lookAlikeDir := filepath.Join(home, "kubeharness-shared-1")
	mkdir(t, lookAlikeDir, 0o700)
	writeFile(t, filepath.Join(lookAlikeDir, "kubeconfig"), kubeconfigFor(t, realServer), 0o600)

	otherToken := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, shared, wantErr string
	}{
		{"a bare path to the developer's kubeconfig", devConfig, "a bare path is refused"},
		{"a bare path to the file ShareFile wrote", path, "a bare path is refused"},
		{"a handle naming the developer's kubeconfig", "kubeharness-share/v1 " + token + " " + devConfig, "not in a directory ShareFile makes"},
		{"a handle naming a look-alike directory", "kubeharness-share/v1 " + token + " " + filepath.Join(lookAlikeDir, "kubeconfig"), "does not carry the handle's token"},
		{"a handle with another token", "kubeharness-share/v1 " + otherToken + " " + path, "does not carry the handle's token"},
		{"a handle without a token", "kubeharness-share/v1 " + path, "no token"},
		{"a handle with a relative path", "kubeharness-share/v1 " + token + " kubeharness-shared-1/kubeconfig", "absolute, clean path"},
		{"a handle with .. in its path", "kubeharness-share/v1 " + token + " " + filepath.Dir(path) + "/../" + filepath.Base(filepath.Dir(path)) + "/kubeconfig", "absolute, clean path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := suite.Connect([]byte(tc.shared))
			if err == nil {
				t.Fatalf("Connect(%q) connected to %s, want a refusal", tc.shared, cfg.Host)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Connect(%q): %v, want an error saying %q", tc.shared, err, tc.wantErr)
			}
			if _, err := suite.ReadShared(tc.shared); err == nil {
				t.Errorf("ReadShared(%q) read it, want a refusal", tc.shared)
			}
		})
	}

	cfg, err := suite.Connect([]byte(shared))
	if err != nil {
		t.Fatalf("Connect of what ShareFile returned: %v", err)
	}
	if cfg.Host != suiteServer {
		t.Errorf("Connect of what ShareFile returned: host %s, want %s", cfg.Host, suiteServer)
	}
}

// A symbolic link anywhere on the way to the shared file is refused: it
// could point at a look-alike of someone else's, or at another file of
// this user's. Here the look-alike even carries the handle's token, as if
// read off Ginkgo's server, and is this user's, as a file behind a link
// swapped after the checks would be.
func TestReadSharedRefusesAPathThroughASymbolicLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		// swap puts a symbolic link to the attacker's tree in the place of
		// a component of the path to the shared file.
		swap func(t *testing.T, tmp, shareDir, path, attacker string)
	}{
		{"an intermediate directory", func(t *testing.T, tmp, shareDir, path, attacker string) {
			mkdir(t, filepath.Join(attacker, filepath.Base(shareDir)), 0o700)
			writeFile(t, filepath.Join(attacker, filepath.Base(shareDir), filepath.Base(path)), nil, 0o600)
			swapForLink(t, tmp, attacker)
		}},
		{"the share's directory", func(t *testing.T, tmp, shareDir, path, attacker string) {
			writeFile(t, filepath.Join(attacker, filepath.Base(path)), nil, 0o600)
			swapForLink(t, shareDir, attacker)
		}},
		{"the file", func(t *testing.T, tmp, shareDir, path, attacker string) {
			writeFile(t, filepath.Join(attacker, filepath.Base(path)), nil, 0o600)
			swapForLink(t, path, filepath.Join(attacker, filepath.Base(path)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			tmp := filepath.Join(base, "tmp")
			mkdir(t, tmp, 0o755)
			shared := share(t, tmp)
			_, path := handleFields(shared)
			attacker := filepath.Join(base, "attacker")
			mkdir(t, attacker, 0o700)
			tc.swap(t, tmp, filepath.Dir(path), path, attacker)
			// The look-alike file, wherever swap put it.
			foreign, err := filepath.EvalSymlinks(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, foreign, lookAlike(t, shared), 0o600)

			cfg, err := suite.Connect([]byte(shared))
			if err == nil {
				t.Fatalf("Connect read %s through a symbolic link and connected to %s, want a refusal", foreign, cfg.Host)
			}
			if !strings.Contains(err.Error(), "is a symbolic link") {
				t.Errorf("Connect: %v, want an error naming the symbolic link", err)
			}
		})
	}
}

// swapForLink moves what is at path aside and puts a symbolic link to
// target in its place.
func swapForLink(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// raceReads is how many reads TestReadSharedRaceWithAFlippingPath makes
// while the path flips. Checks made on the path, then a read by the path,
// returned the attacker's file about once in a thousand reads with the
// link and once in a hundred with the directories exchanged, here.
const raceReads = 5000

// The attack as played against checks made on the path: the directory the
// share is in flips between the real one, which passes every check, and
// an attacker's, which would fail them (mode 0755 and 0644 stand for
// another user's), hoping to flip between the checks and the read. No read
// may return the attacker's file.
func TestReadSharedRaceWithAFlippingPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup prepares tmp, which holds the share, and returns a
		// function that flips what tmp is: the real directory when i is
		// even, the attacker's when it is odd.
		setup func(t *testing.T, tmp, attacker string) (flip func(i int) error)
	}{
		{"a symbolic link", func(t *testing.T, tmp, attacker string) func(int) error {
			real := tmp + ".real"
			swapForLink(t, tmp, real)
			if err := os.Rename(tmp+".moved", real); err != nil {
				t.Fatal(err)
			}
			next := tmp + ".next"
			return func(i int) error {
				target := real
				if i%2 == 1 {
					target = attacker
				}
				// rename(2) replaces the link in one step.
				if err := os.Symlink(target, next); err != nil {
					return err
				}
				return os.Rename(next, tmp)
			}
		}},
		{"directories exchanged", func(t *testing.T, tmp, attacker string) func(int) error {
			if err := exchange(tmp, attacker); err != nil {
				t.Skipf("exchanging two directories in one step: %v", err)
			}
			if err := exchange(tmp, attacker); err != nil {
				t.Fatal(err)
			}
			// Each call swaps the two, so tmp alternates.
			return func(int) error { return exchange(tmp, attacker) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			tmp := filepath.Join(base, "tmp")
			mkdir(t, tmp, 0o755)
			shared := share(t, tmp)
			_, path := handleFields(shared)
			attacker := filepath.Join(base, "attacker")
			attackerDir := filepath.Join(attacker, filepath.Base(filepath.Dir(path)))
			mkdir(t, attackerDir, 0o755)
			writeFile(t, filepath.Join(attackerDir, filepath.Base(path)), lookAlike(t, shared), 0o644)
			flip := tc.setup(t, tmp, attacker)

			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := flip(i); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			var accepted, foreign int
			for range raceReads {
				data, err := suite.ReadShared(shared)
				if err != nil {
					continue
				}
				accepted++
				if bytes.Contains(data, []byte(realServer)) {
					foreign++
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d reads: %d accepted, %d of them the attacker's file", raceReads, accepted, foreign)
			if foreign != 0 {
				t.Errorf("ReadShared returned the attacker's file %d times in %d reads while the path flipped", foreign, raceReads)
			}
		})
	}
}
