package controlplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Whatever a tuned start copies into etcd is served to every client of its
// API server: an etcd template that another local user could write is a
// way for that user to plant objects (a ClusterRoleBinding to
// cluster-admin) in every control plane started from it, and a template's
// name is a hash of public facts that anyone can compute. A template is
// therefore used only when nobody but this user and root can have changed
// it or swapped it for another: checkPrivateChain and checkPrivateTree
// below, harness/internal/ownership's rules, which the binaries store
// follows too: a group only the owner belongs to may write.

// checkPrivateChain checks that dir and each directory above it, up to /,
// is a directory owned by this user or root that group and others cannot
// write, sticky directories such as /tmp aside (ownership.CheckDirChain):
// otherwise whoever can write one of them can replace what lies below it.
func checkPrivateChain(dir string) error {
	return templateFix(ownership.CheckDirChain(dir))
}

// checkPrivateTree checks what dir holds, without following symbolic
// links: directories and regular files only, each owned by this user or
// root and not writable by group or others. Inside a template no sticky
// directory passes: everything in it is copied, a file another user added
// there too.
func checkPrivateTree(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, not a directory: remove it (it is remade), or set Options.TemplateDir to a directory only you can write", dir)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is %s, not a regular file or directory: remove %s (it is remade), or set Options.TemplateDir to a directory only you can write", path, ownership.KindOf(fi.Mode()), dir)
		}
		return templateFix(ownership.CheckPrivate(path, fi))
	})
}

// templateFix adds to an *ownership.Error what it means for an etcd
// template and how to fix it.
func templateFix(err error) error {
	var oe *ownership.Error
	switch {
	case !errors.As(err, &oe):
		return err
	case oe.Owner != "":
		return fmt.Errorf("%w: that user could have planted or changed an etcd template there; set Options.TemplateDir to a directory only you can write, or remove %s as its owner", err, oe.Path)
	}
	return fmt.Errorf("%w: another user could have planted or changed an etcd template there; run `chmod go-w %s` if only you should write it, or set Options.TemplateDir to a directory only you can write", err, oe.Path)
}
