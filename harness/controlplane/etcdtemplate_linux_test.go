package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// templateFixture is a binary directory whose etcd and kube-apiserver only
// record that they ran, and a bootstrapped-looking etcd template for them
// below a cache directory of this test's own.
type templateFixture struct {
	o                  Options
	template, ranMark  string
	cacheDir, startDir string
}

func newTemplateFixture(t *testing.T) templateFixture {
	t.Helper()
	base := t.TempDir()
	bin := filepath.Join(base, "bin")
	f := templateFixture{cacheDir: filepath.Join(base, "templates"), startDir: filepath.Join(base, "run"), ranMark: filepath.Join(bin, "ran")}
	for _, dir := range []string{bin, f.startDir} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := "#!/bin/sh\necho " + name + " >> " + f.ranMark + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.o = Options{BinaryDir: bin, TemplateDir: f.cacheDir, Dir: f.startDir, APIServerFlags: HarnessAPIServerFlags()}
	var err error
	if f.template, err = templateDir(bin, f.o); err != nil {
		t.Fatal(err)
	}
	// What a planted template would hold: a member directory with data.
	if err := os.MkdirAll(filepath.Join(f.template, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.template, "member", "snap", "db"), []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.cacheDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return f
}

// A template that only this user (or root) can have written is used.
func TestEnsureTemplateUsesAPrivateTemplate(t *testing.T) {
	f := newTemplateFixture(t)
	got, err := ensureTemplate(f.o.BinaryDir, f.o)
	if err != nil {
		t.Fatal(err)
	}
	if got != f.template {
		t.Errorf("ensureTemplate = %s, want %s", got, f.template)
	}
}

// A template that its owner's private group may write (Debian's and
// Ubuntu's umask 002) is used: no one else is in that group.
func TestEnsureTemplateUsesATemplateOfTheUsersPrivateGroup(t *testing.T) {
	if !ownership.PrivateGroup(uint32(os.Geteuid()), uint32(os.Getegid())) {
		t.Skipf("gid %d is not a group of uid %d alone", os.Getegid(), os.Geteuid())
	}
	f := newTemplateFixture(t)
	chmod(t, f.cacheDir, 0o770)
	chmod(t, f.template, 0o770)
	if _, err := ensureTemplate(f.o.BinaryDir, f.o); err != nil {
		t.Fatal(err)
	}
}

// TestTemplateOthersCouldWriteIsRefused: a template that another user
// could have planted or changed (its directory, a directory above it or a
// file in it writable by group or others, or owned by another user) is
// refused with the path, what is wrong and how to fix it, before anything
// is copied or started.
func TestTemplateOthersCouldWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil makes the fixture untrustworthy and returns the path the
		// error must name.
		spoil func(t *testing.T, f templateFixture) string
		want  []string
	}{{
		name: "template directory writable by group and others",
		spoil: func(t *testing.T, f templateFixture) string {
			return chmod(t, f.template, 0o777)
		},
		want: []string{"(mode drwxrwxrwx) is writable by ", "chmod go-w", "Options.TemplateDir"},
	}, {
		name: "template directory writable by a group others are in",
		spoil: func(t *testing.T, f templateFixture) string {
			if err := os.Chown(f.template, -1, foreignGroup(t)); err != nil {
				t.Fatal(err)
			}
			return chmod(t, f.template, 0o770)
		},
		want: []string{"writable by its group", "chmod go-w"},
	}, {
		name: "cache directory writable by others",
		spoil: func(t *testing.T, f templateFixture) string {
			return chmod(t, f.cacheDir, 0o777)
		},
		want: []string{"(mode drwxrwxrwx) is writable by ", "chmod go-w"},
	}, {
		name: "data file in the template writable by others",
		spoil: func(t *testing.T, f templateFixture) string {
			return chmod(t, filepath.Join(f.template, "member", "snap", "db"), 0o666)
		},
		want: []string{"(mode -rw-rw-rw-) is writable by ", "chmod go-w"},
	}, {
		name: "template is a symbolic link",
		spoil: func(t *testing.T, f templateFixture) string {
			elsewhere := filepath.Join(filepath.Dir(f.cacheDir), "elsewhere")
			if err := os.Rename(f.template, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, f.template); err != nil {
				t.Fatal(err)
			}
			return f.template
		},
		want: []string{"symbolic link"},
	}, {
		name: "template directory owned by another user",
		spoil: func(t *testing.T, f templateFixture) string {
			if os.Geteuid() != 0 {
				t.Skip("not root: cannot give a directory to another user")
			}
			uid, gid := ensureOtherUser(t)
			if err := os.Chown(f.template, int(uid), int(gid)); err != nil {
				t.Fatal(err)
			}
			return f.template
		},
		want: []string{"belongs to " + otherUser + " (uid ", "Options.TemplateDir"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTemplateFixture(t)
			path := tc.spoil(t, f)
			cp, err := Start(f.o)
			if err == nil {
				_ = cp.Stop()
				t.Fatal("Start used the template")
			}
			t.Logf("refused: %v", err)
			for _, want := range append(tc.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
			if _, err := os.Stat(f.ranMark); err == nil {
				t.Error("etcd or kube-apiserver ran on the template")
			}
			if entries, _ := os.ReadDir(f.startDir); len(entries) > 0 {
				t.Errorf("Start left %s in %s", entries[0].Name(), f.startDir)
			}
		})
	}
}

// foreignGroup is a group other users are in, for a directory's group:
// otherUser's when root, else one of this user's supplementary groups
// that is not private to it.
func foreignGroup(t *testing.T) int {
	t.Helper()
	if os.Geteuid() == 0 {
		_, gid := ensureOtherUser(t)
		return int(gid)
	}
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if !ownership.PrivateGroup(uint32(os.Geteuid()), uint32(g)) {
			return g
		}
	}
	t.Skip("not root, and in no group that others are in")
	return 0
}

func chmod(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
