package binaries

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// moduleDir returns a module directory that builds c at version: the
// committed one under hack/ when it pins that version, or one generated
// under <store>/k8s/.src otherwise.
func (b *Builder) moduleDir(ctx context.Context, c Component, version versions.Version) (string, error) {
	if dir, ok := b.committedModule(c, version); ok {
		return dir, nil
	}
	dir := b.generatedModuleDir(c, version)
	if err := b.checkModuleDir(dir); err != nil {
		return "", err
	}
	if generatedModuleReady(dir, c.Package) {
		return dir, nil
	}
	if err := b.generateModule(ctx, c, version, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// committedModule returns c's committed build module, Root's c.HackDir,
// when its go.mod requires c's module at version; ok is false outside the
// repository and for any other version.
func (b *Builder) committedModule(c Component, version versions.Version) (dir string, ok bool) {
	if b.Root == "" {
		return "", false
	}
	dir = filepath.Join(b.Root, c.HackDir)
	f, err := readGoMod(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", false
	}
	pinned, ok := requirement(f, c.Module)
	if !ok {
		return "", false
	}
	v, err := versions.Parse(pinned)
	return dir, err == nil && v == version
}

// generatedModuleDir is where the build module for c's module at version is
// generated: one per module and version, shared by every component the
// module provides.
func (b *Builder) generatedModuleDir(c Component, version versions.Version) string {
	return filepath.Join(b.store(), "k8s", ".src", strings.ReplaceAll(c.Module, "/", "_")+"@"+version.String())
}

// checkModuleDir refuses dir, a build module kubeharness generates in the
// store, when others could have written it or its files (checkStore): what
// it builds is run. One that does not exist yet is fine.
func (b *Builder) checkModuleDir(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return checkStore(b.store(), dir, "go.mod", "go.sum", "main.go")
}

// generatedModuleReady reports whether the module generated earlier in dir
// builds pkg: it was tidied (it has a go.sum) and declares pkg as a tool.
// One generated before pkg was a component lacks its dependencies' go.sum
// entries, and is generated again.
func generatedModuleReady(dir, pkg string) bool {
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err != nil {
		return false
	}
	f, err := readGoMod(filepath.Join(dir, "go.mod"))
	return err == nil && declaresTool(f, pkg)
}

// generateModule writes the build module for c's module at version into dir
// and tidies it, which resolves its dependencies through the Go module
// proxy. A module whose tidy failed is left without a go.sum, so that it is
// not taken as ready.
func (b *Builder) generateModule(ctx context.Context, c Component, version versions.Version, dir string) error {
	fmt.Fprintf(b.out(), "%s: preparing a build module for %s@v%s in %s\n", c.Name, c.Module, version, dir)
	if _, err := b.download(ctx, c.Module, version); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	staging, err := b.stagingReplacements(ctx, c.Module, version)
	if err != nil {
		return err
	}
	data, err := buildModFile(c.Module, version, staging)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), data, 0o644); err != nil {
		return err
	}
	if _, err := b.goOutput(ctx, dir, "mod", "tidy"); err != nil {
		_ = os.Remove(filepath.Join(dir, "go.sum"))
		return fmt.Errorf("resolving the dependencies of %s@v%s through the Go module proxy: %w", c.Module, version, err)
	}
	// go writes go.sum 0666 less the umask, which may leave it writable by
	// its group: checkModuleDir would refuse it.
	return os.Chmod(filepath.Join(dir, "go.sum"), 0o644)
}

// stagingReplacements lists the modules a build module for module at
// version must replace: k8s.io/kubernetes's staging modules, once the proxy
// is known to serve every one of them (checkComplete); none for any other
// module.
func (b *Builder) stagingReplacements(ctx context.Context, module string, version versions.Version) ([]string, error) {
	if module != KubeAPIServer.Module {
		return nil, nil
	}
	if err := b.checkComplete(ctx, version); err != nil {
		return nil, err
	}
	mod, err := b.readKubeGoMod(ctx, version)
	if err != nil {
		return nil, err
	}
	return mod.stagingModules()
}

// buildModFile is the go.mod of a build module for module at version. It
// requires module; it replaces each of staging, since k8s.io/kubernetes
// requires its staging modules at v0.0.0 and replaces them with ./staging,
// which a module depending on it must do with their published
// v0.<minor>.<patch>; and it declares as tools the main packages of every
// component module provides, so that tidying keeps what they need.
func buildModFile(module string, version versions.Version, staging []string) ([]byte, error) {
	mf := &modfile.File{}
	_ = mf.AddModuleStmt("kubeharness.local/controlplane")
	_ = mf.AddGoStmt("1.26")
	_ = mf.AddRequire(module, "v"+version.String())
	for _, m := range staging {
		_ = mf.AddReplace(m, "", m, "v"+stagingVersion(version).String())
	}
	for _, c := range allComponents() {
		if c.Module == module {
			_ = mf.AddTool(c.Package)
		}
	}
	return mf.Format()
}

// kubeAPIServerTestMain is KubeAPIServerTest's main package. The file is
// excluded from kubeharness's own builds by a build constraint that
// mainModule drops.
//
//go:embed kubeapiservertest/main.go
var kubeAPIServerTestMain []byte

// mainModule writes the module c's own main is built in for version: a
// copy of modDir, the build module of c.Package, under another module path
// and with c.main as its main package, so that the main compiles against
// exactly the dependencies (and the Go build cache) of the binary it is
// built beside. It returns the module's directory, one per component and
// version in the generated modules' directory, written anew each build.
func (b *Builder) mainModule(c Component, version versions.Version, modDir string) (string, error) {
	f, err := readGoMod(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", err
	}
	if err := f.AddModuleStmt(mainModulePath(c)); err != nil {
		return "", err
	}
	for _, t := range append([]*modfile.Tool(nil), f.Tool...) {
		_ = f.DropTool(t.Path)
	}
	f.Cleanup()
	gomod, err := f.Format()
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile(filepath.Join(modDir, "go.sum"))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(b.store(), "k8s", ".src", c.Name+"@"+version.String())
	if err := b.checkModuleDir(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"go.mod": gomod, "go.sum": gosum, "main.go": mainSource(c.main)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// mainModulePath is the module path of c's main module, which a binary
// built from it reports as its main package (debug/buildinfo): it names
// the main's source, so that a binary built from another version of it is
// built again.
func mainModulePath(c Component) string {
	sum := sha256.Sum256(c.main)
	return "kubeharness.local/" + c.Name + "/" + hex.EncodeToString(sum[:6])
}

// mainSource is an embedded main package's source without the build
// constraint that keeps it out of kubeharness's own builds.
func mainSource(src []byte) []byte {
	return bytes.Replace(src, []byte("//go:build ignore\n\n"), nil, 1)
}
