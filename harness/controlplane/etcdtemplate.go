package controlplane

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A fresh kube-apiserver spends most of its start writing bootstrap objects
// (about 150 RBAC roles and bindings, priority classes, flow-control
// configuration, the system namespaces) one by one before /healthz passes.
// Tuned starts therefore begin from an etcd data directory in which one
// apiserver of the same build has already done that: a template made once per
// binary pair and flag set and kept in Options.TemplateDir, copied to tmpfs
// for each start.
// Nothing in it depends on the ports, certificates or keys of the start that
// made it; each start brings its own. PrepareTemplate makes it beside the
// binaries, which is where a CI cache of them keeps it too; a start that
// finds none makes it on its own plane (snapshot.go). Templates are
// sparse files (copySparse): about a megabyte on disk each.

// templateName is the name of the template for the binaries in binDir,
// started with o's flags and holding o.CRDs.
func templateName(binDir string, o Options) (string, error) {
	h := sha256.New()
	for _, name := range []string{etcdBinary, APIServerBinary(binDir, o)} {
		fi, err := os.Stat(filepath.Join(binDir, name))
		if err != nil {
			return "", err
		}
		// Whole seconds: a CI cache or archive that restores the binaries
		// may keep no finer modification time, and their templates with
		// them must still match.
		fmt.Fprintf(h, "%s %d %d\n", name, fi.Size(), fi.ModTime().Unix())
	}
	fmt.Fprintf(h, "%s\n%s\n", strings.Join(o.APIServerFlags, " "), strings.Join(tunedAPIServerFlags(), " "))
	// How etcd was run when it bootstrapped the template: since etcd
	// listens on unix sockets only, templates made before are made again.
	fmt.Fprintf(h, "%s\n%s\n", strings.Join(tunedEtcdFlags(), " "), etcdListen)
	name := hex.EncodeToString(h.Sum(nil))[:16]
	if len(o.CRDs) > 0 {
		sum, err := crdsSum(o.CRDs)
		if err != nil {
			return "", err
		}
		name += crdTemplateInfix + sum
	}
	return name, nil
}

// templateDir is where a start of the binaries in binDir with o makes
// its template when none is found (templatesDir).
func templateDir(binDir string, o Options) (string, error) {
	name, err := templateName(binDir, o)
	if err != nil {
		return "", err
	}
	parent, err := templatesDir(o)
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, name), nil
}

// templatesDir is the directory a start of o makes etcd templates in:
// Options.TemplateDir, or kubeharness/etcd-templates in the user's cache
// directory.
func templatesDir(o Options) (string, error) {
	if o.TemplateDir != "" {
		// etcd runs in the plane's own directory: a relative data
		// directory would be read from there, and the template made
		// from it would stay empty.
		return filepath.Abs(o.TemplateDir)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for etcd templates: %w; set Options.TemplateDir", err)
	}
	return filepath.Join(cache, "kubeharness", "etcd-templates"), nil
}

// TemplatesBeside is where PrepareTemplate keeps the etcd templates of
// the binaries in binaryDir: .etcd-templates inside that directory, so
// that whatever caches the binaries (a CI cache of the binaries'
// directory) caches their templates with them.
func TemplatesBeside(binaryDir string) string {
	return filepath.Join(binaryDir, ".etcd-templates")
}

// templateParents are the directories a start of o looks for a template
// in, in order: Options.TemplateDir when set, the binaries' own
// (TemplatesBeside), and the user's cache when Options.TemplateDir is not
// set. The first holds the templates the start makes.
func templateParents(binDir string, o Options) ([]string, error) {
	made, err := templatesDir(o)
	if err != nil {
		return nil, err
	}
	parents := []string{made}
	if beside := TemplatesBeside(binDir); beside != made {
		parents = append(parents, beside)
	}
	return parents, nil
}

// findTemplate returns the template named name in the first of parents
// that holds one, "" when none does. A template there that another user
// could have written is an error (trust.go); one this user may not read
// beside the binaries (another user, root, prepared it for itself) is
// passed over.
func findTemplate(parents []string, name string) (string, error) {
	for i, parent := range parents {
		dir := filepath.Join(parent, name)
		// Beside the binaries, a template this user may not read is
		// someone else's, and none of this start's.
		passOver := func(err error) bool { return i > 0 && errors.Is(err, fs.ErrPermission) }
		if _, err := os.Lstat(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) || passOver(err) {
				continue
			}
			return "", err
		}
		if err := checkPrivateChain(parent); err != nil {
			return "", refusal(parent, err)
		}
		if err := checkPrivateTree(dir); err != nil {
			if passOver(err) {
				continue
			}
			return "", refusal(dir, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "member")); err != nil {
			// No data: a start killed before its rename, remade.
			continue
		}
		// Its use time, for pruning.
		now := time.Now()
		_ = os.Chtimes(dir, now, now)
		return dir, nil
	}
	return "", nil
}

// ensureTemplate returns the template for binDir, making it first when it is
// missing: it starts etcd and kube-apiserver once on an empty data directory,
// waits for the bootstrap to finish, stops both and keeps the data. A
// template that another user could have written is refused (trust.go).
func ensureTemplate(binDir string, o Options) (string, error) {
	if len(o.CRDs) > 0 {
		return ensureCRDTemplate(binDir, o)
	}
	name, err := templateName(binDir, o)
	if err != nil {
		return "", err
	}
	parents, err := templateParents(binDir, o)
	if err != nil {
		return "", err
	}
	if dir, err := findTemplate(parents, name); dir != "" || err != nil {
		return dir, err
	}
	return makeBaseTemplate(binDir, o, parents[0], name)
}

// makeBaseTemplate bootstraps the template name in parent: a start of its
// own on an empty data directory until every bootstrap hook has finished.
func makeBaseTemplate(binDir string, o Options, parent, name string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	if err := checkPrivateChain(parent); err != nil {
		return "", refusal(parent, err)
	}
	staging, err := os.MkdirTemp(parent, ".staging-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)

	// Full readiness: every bootstrap hook has finished. The default
	// namespace is the last object the bootstrap writes.
	err = makeTemplate(binDir, o, staging, "/readyz", waitDefaultNamespace)
	if err != nil {
		return "", fmt.Errorf("bootstrapping the etcd template in %s: %w", staging, err)
	}
	dir, err := keepTemplate(staging, filepath.Join(parent, name))
	if err == nil {
		pruneBaseTemplates(dir)
	}
	return dir, err
}

// makeTemplate runs a control plane on a copy of the etcd data in staging
// until readyPath answers and then, when set, fill, stops it keeping the
// data, and copies that back into staging. The plane runs on tmpfs, and
// the copy back leaves holes where etcd preallocated its log (copySparse).
func makeTemplate(binDir string, o Options, staging, readyPath string, fill func(*ControlPlane) error) error {
	data, err := os.MkdirTemp(cmp.Or(o.Dir, etcdTmpfsDir()), "kubeharness-etcd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	if err := copyTree(staging, data); err != nil {
		return err
	}
	c := &ControlPlane{BinaryDir: binDir, EtcdDataDir: data, keepData: true}
	err = c.run(o, readyPath)
	if err == nil && fill != nil {
		err = fill(c)
	}
	if stopErr := c.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	return copyTree(data, staging)
}

// keepTemplate moves the template made in staging to dir, where another
// start may have put one first: that one is then used, once checked.
func keepTemplate(staging, dir string) (string, error) {
	if _, err := os.Lstat(filepath.Join(dir, "member")); err != nil {
		// A directory without etcd's data is no template (a start killed
		// before its rename, say); os.Remove takes it only when empty.
		_ = os.Remove(dir)
	}
	if err := os.Rename(staging, dir); err != nil {
		if _, statErr := os.Lstat(filepath.Join(dir, "member")); statErr == nil {
			if err := checkPrivateTree(dir); err != nil {
				return "", refusal(dir, err)
			}
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// refusal is the error for an etcd template (or templates' directory) at
// path that checkPrivateChain or checkPrivateTree refused with err, which
// names the path at fault.
func refusal(path string, err error) error {
	if strings.Contains(err.Error(), path) {
		return fmt.Errorf("refusing the etcd template: %w", err)
	}
	return fmt.Errorf("refusing the etcd template in %s: %w", path, err)
}

// copyTree copies the regular files and directories below src into dst;
// anything else there (a symbolic link) is an error. ensureTemplate
// checked src already: this only keeps a copy from following a link.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		in, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if err := copySparse(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// copySparse copies in to out, leaving a hole where in holds a block of
// zeros: etcd preallocates its write-ahead log, 64 MB of zeros, which a
// template then neither stores nor copies.
func copySparse(out, in *os.File) error {
	buf := make([]byte, sparseBlock)
	var size int64
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			if bytes.Equal(buf[:n], zeroBlock[:n]) {
				if _, err := out.Seek(int64(n), io.SeekCurrent); err != nil {
					return err
				}
			} else if _, err := out.Write(buf[:n]); err != nil {
				return err
			}
			size += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// A hole at the end is the file's length still.
			return out.Truncate(size)
		}
		if err != nil {
			return err
		}
	}
}

// sparseBlock is the size of the blocks copySparse reads.
const sparseBlock = 64 << 10

var zeroBlock = make([]byte, sparseBlock)

func waitDefaultNamespace(c *ControlPlane) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.api.wait(ctx, "/api/v1/namespaces/default", nil)
}
