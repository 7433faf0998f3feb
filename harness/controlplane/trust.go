package controlplane

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// Whatever a tuned start copies into etcd is served to every client of its
// API server: an etcd template that another local user could write is a
// way for that user to plant objects (a ClusterRoleBinding to
// cluster-admin) in every control plane started from it, and a template's
// name is a hash of public facts that anyone can compute. A template is
// therefore used only when nobody but this user and root can have changed
// it or swapped it for another: checkPrivateChain and checkPrivateTree
// below. They follow harness/binaries' rules for its store: a group only
// the owner belongs to may write (userPrivateGroup).

// checkPrivateChain checks that dir and each directory above it, up to /,
// is a directory owned by this user or root that group and others cannot
// write: otherwise whoever can write one of them can replace what lies
// below it. A directory with the sticky bit (/tmp, /dev/shm) owned by root
// or this user is accepted although others write it: there others can add
// entries of their own but not rename or remove this user's, and every
// entry below it is checked in turn. A symbolic link on the way is accepted
// when this user or root owns it (its directory was checked already), and
// where it leads is checked as well.
func checkPrivateChain(dir string) error {
	return checkChain(dir, 0)
}

func checkChain(dir string, links int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var chain []string
	for p := abs; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if err := checkOwner(p, fi); err != nil {
				return err
			}
			if links == 8 {
				return fmt.Errorf("%s: too many symbolic links on the way", abs)
			}
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return err
			}
			if err := checkChain(target, links+1); err != nil {
				return err
			}
			continue
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
		if err := checkEntry(p, fi, true); err != nil {
			return err
		}
	}
	return nil
}

// checkPrivateTree checks what dir holds, without following symbolic
// links: directories and regular files only, each owned by this user or
// root and not writable by group or others.
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
			return fmt.Errorf("%s is a %s, not a regular file or directory: remove %s (it is remade), or set Options.TemplateDir to a directory only you can write", path, typeName(fi.Mode()), dir)
		}
		return checkEntry(path, fi, false)
	})
}

// checkEntry checks that path (described by fi, from Lstat) is owned by
// this user or root and that group and others cannot write it; with
// sticky, a sticky directory that they can write passes (see
// checkPrivateChain). Inside a template none does: everything in it is
// copied, a file another user added there too. The write bit of the
// owner's private group (userPrivateGroup) lets no one else in and does not
// count.
func checkEntry(path string, fi fs.FileInfo, sticky bool) error {
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	mode := fi.Mode()
	if sticky && mode.IsDir() && mode&fs.ModeSticky != 0 {
		return nil
	}
	others := mode.Perm()&0o002 != 0
	group := ""
	if mode.Perm()&0o020 != 0 {
		uid, gid, ok := fileOwner(fi)
		switch {
		case !ok:
			group = "its group"
		case !userPrivateGroup(uid, gid):
			group = "its group (" + groupName(gid) + ")"
		}
	}
	who := ""
	switch {
	case group != "" && others:
		who = group + " and others"
	case group != "":
		who = group
	case others:
		who = "others"
	default:
		return nil
	}
	return fmt.Errorf("%s is writable by %s (%s): another user could have planted or changed an etcd template there; run `chmod go-w %s` if only you should write it, or set Options.TemplateDir to a directory only you can write", path, who, mode, path)
}

// checkOwner checks that path (described by fi) is owned by this user or
// root.
func checkOwner(path string, fi fs.FileInfo) error {
	uid, _, ok := fileOwner(fi)
	if !ok || uid == 0 || uid == os.Geteuid() {
		return nil
	}
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name += " (" + u.Username + ")"
	}
	return fmt.Errorf("%s is owned by uid %s, not by you (uid %d) or root: that user could have planted or changed an etcd template there; set Options.TemplateDir to a directory only you can write, or remove %s as its owner", path, name, os.Geteuid(), path)
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return strings.TrimSpace(m.Type().String())
}
