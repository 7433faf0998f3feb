package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// made it; each start brings its own.

// templateDir is where the template for the binaries in binDir, started
// with o's flags, is kept.
func templateDir(binDir string, o Options) (string, error) {
	h := sha256.New()
	for _, name := range []string{etcdBinary, APIServerBinary(binDir, o)} {
		fi, err := os.Stat(filepath.Join(binDir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", name, fi.Size(), fi.ModTime().UnixNano())
	}
	fmt.Fprintf(h, "%s\n%s\n", strings.Join(o.APIServerFlags, " "), strings.Join(tunedAPIServerFlags(), " "))
	// How etcd was run when it bootstrapped the template: since etcd
	// listens on unix sockets only, templates made before are made again.
	fmt.Fprintf(h, "%s\n%s\n", strings.Join(tunedEtcdFlags(), " "), etcdListen)
	parent, err := templatesDir(o)
	if err != nil {
		return "", err
	}
	name := hex.EncodeToString(h.Sum(nil))[:16]
	if len(o.CRDs) > 0 {
		sum, err := crdsSum(o.CRDs)
		if err != nil {
			return "", err
		}
		name += crdTemplateInfix + sum
	}
	return filepath.Join(parent, name), nil
}

// templatesDir is the directory the etcd templates of o are kept in:
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

// ensureTemplate returns the template for binDir, making it first when it is
// missing: it starts etcd and kube-apiserver once on an empty data directory,
// waits for the bootstrap to finish, stops both and keeps the data. A
// template that another user could have written is refused (trust.go).
func ensureTemplate(binDir string, o Options) (string, error) {
	if len(o.CRDs) > 0 {
		return ensureCRDTemplate(binDir, o)
	}
	dir, err := templateDir(binDir, o)
	if err != nil {
		return "", err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	if err := checkPrivateChain(parent); err != nil {
		return "", refusal(parent, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		if err := checkPrivateTree(dir); err != nil {
			return "", refusal(dir, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "member")); err == nil {
			return dir, nil
		}
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
	return keepTemplate(staging, dir)
}

// makeTemplate runs a control plane on the etcd data in staging until
// readyPath answers and then, when set, fill, and stops it keeping the
// data.
func makeTemplate(binDir string, o Options, staging, readyPath string, fill func(*ControlPlane) error) error {
	c := &ControlPlane{BinaryDir: binDir, EtcdDataDir: staging, keepData: true}
	err := c.run(o, readyPath)
	if err == nil && fill != nil {
		err = fill(c)
	}
	if stopErr := c.Stop(); err == nil {
		err = stopErr
	}
	return err
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
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

func waitDefaultNamespace(c *ControlPlane) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.api.wait(ctx, "/api/v1/namespaces/default", nil)
}
