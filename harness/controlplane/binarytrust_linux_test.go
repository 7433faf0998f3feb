package controlplane

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/internal/proctest"
)

// binFixture is a directory of binaries, each a script that creates
// marker when it runs (no real control-plane binary is needed), and what
// Start needs besides, in this test's own directories.
type binFixture struct {
	o           Options
	bin, marker string
}

func newBinFixture(t *testing.T) binFixture {
	t.Helper()
	base := t.TempDir()
	f := binFixture{bin: filepath.Join(base, "bin"), marker: filepath.Join(base, "ran")}
	run := filepath.Join(base, "run")
	for _, dir := range []string{f.bin, run} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := "#!/bin/sh\ntouch '" + f.marker + "'\n"
		if err := os.WriteFile(filepath.Join(f.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.o = Options{BinaryDir: f.bin, TemplateDir: filepath.Join(base, "templates"), Dir: run, StartTimeout: 5 * time.Second}
	return f
}

func (f binFixture) ran() bool {
	_, err := os.Stat(f.marker)
	return err == nil
}

// TestStartRunsBinariesOnlyYouCanChange: a BinaryDir only this user can
// change passes, and its binaries run (the scripts then fail to start a
// control plane): the refusals' missing marker proves something.
func TestStartRunsBinariesOnlyYouCanChange(t *testing.T) {
	f := newBinFixture(t)
	cp, err := Start(f.o)
	if err == nil {
		_ = cp.Stop()
		t.Fatal("scripts started a control plane")
	}
	if strings.Contains(err.Error(), "others could change") {
		t.Fatalf("a private BinaryDir was refused: %v", err)
	}
	if !f.ran() {
		t.Errorf("the binaries did not run (%v): the refusals' missing marker proves nothing", err)
	}
}

// TestStartRefusesBinariesOthersCouldChange: a BinaryDir, a directory
// above it, or a binary in it (or where a link among them leads) that
// another user owns or may write is refused before anything runs, naming
// the path, what is wrong and the fix.
func TestStartRefusesBinariesOthersCouldChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil lets others change what f runs and returns the path the
		// error names and what it says of it.
		spoil func(t *testing.T, f binFixture) (path, what string)
	}{
		{"BinaryDir writable by others", func(t *testing.T, f binFixture) (string, string) {
			return chmod(t, f.bin, 0o757), " (mode drwxr-xrwx) is writable by others"
		}},
		{"BinaryDir sticky and writable by others", func(t *testing.T, f binFixture) (string, string) {
			// Others may add kube-apiserver-test there, which would run.
			return chmod(t, f.bin, 0o757|os.ModeSticky), " (mode dtrwxr-xrwx) is writable by others"
		}},
		{"a directory above BinaryDir writable by others", func(t *testing.T, f binFixture) (string, string) {
			return chmod(t, filepath.Dir(f.bin), 0o757), " (mode drwxr-xrwx) is writable by others"
		}},
		{"etcd writable by others", func(t *testing.T, f binFixture) (string, string) {
			return chmod(t, filepath.Join(f.bin, "etcd"), 0o757), " (mode -rwxr-xrwx) is writable by others"
		}},
		{"kube-apiserver-test writable by others", func(t *testing.T, f binFixture) (string, string) {
			test := filepath.Join(f.bin, binaries.KubeAPIServerTest.Name)
			if err := os.WriteFile(test, []byte("#!/bin/sh\ntouch '"+f.marker+"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return chmod(t, test, 0o777), " (mode -rwxrwxrwx) is writable by "
		}},
		{"etcd a link into a directory others may write", func(t *testing.T, f binFixture) (string, string) {
			shared := t.TempDir()
			etcd := filepath.Join(f.bin, "etcd")
			if err := os.Rename(etcd, filepath.Join(shared, "etcd")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(shared, "etcd"), etcd); err != nil {
				t.Fatal(err)
			}
			return chmod(t, shared, 0o757), " (mode drwxr-xrwx) is writable by others"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBinFixture(t)
			path, what := tc.spoil(t, f)
			cp, err := Start(f.o)
			if err == nil {
				_ = cp.Stop()
				t.Fatal("Start ran binaries others could change")
			}
			t.Logf("refused: %v", err)
			for _, want := range []string{
				"refusing the control-plane binaries in " + f.bin + ": others could change the binaries kubeharness runs: ",
				path + what, "run `chmod go-w " + path + "`",
				"`kubeharness bins use VERSION -p PATH`, PATH a directory only you can write",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if f.ran() {
				t.Error("a binary of the refused directory ran")
			}
		})
	}
}

// TestStartRefusesBinariesOfAnotherUser: a BinaryDir or a binary in it
// that belongs to another user is refused, though only that user may
// write it.
func TestStartRefusesBinariesOfAnotherUser(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	for _, name := range []string{"", "etcd"} {
		f := newBinFixture(t)
		path := filepath.Join(f.bin, name)
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
		cp, err := Start(f.o)
		if err == nil {
			_ = cp.Stop()
			t.Fatalf("Start ran binaries of %s", path)
		}
		want := path + " belongs to " + otherUser + " (uid " + strconv.Itoa(uid) + "), not to you (root)"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
		if f.ran() {
			t.Errorf("a binary of %s ran", path)
		}
	}
}
