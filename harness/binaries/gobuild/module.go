package gobuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// moduleDir returns a module directory that builds c at version: the
// caller's (Modules) when it requires that version, or one generated
// under <store>/k8s/.src otherwise.
func (s *Source) moduleDir(ctx context.Context, c component.Component, version versions.Version) (string, error) {
	if dir, ok := s.committedModule(c, version); ok {
		return dir, nil
	}
	dir := s.Store.SourceDir(strings.ReplaceAll(c.Module, "/", "_") + "@" + version.String())
	if err := s.checkModuleDir(dir); err != nil {
		return "", err
	}
	if generatedModuleReady(dir, c.Package) {
		return dir, nil
	}
	if err := generateModule(ctx, s.proxy(), s.out(), c, version, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// committedModule returns the caller's build module of c's module
// (Modules) when its go.mod requires c's module at version; ok is false
// without one and for any other version.
func (s *Source) committedModule(c component.Component, version versions.Version) (dir string, ok bool) {
	dir = s.Modules[c.Module]
	if dir == "" {
		return "", false
	}
	f, err := goproxy.ReadGoMod(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", false
	}
	pinned, ok := goproxy.Requirement(f, c.Module)
	if !ok {
		return "", false
	}
	v, err := versions.Parse(pinned)
	return dir, err == nil && v == version
}

// checkModuleDir refuses dir, a build module kubeharness generates in the
// store, when others could have written it or its files (store.Check):
// what it builds is run. One that does not exist yet is fine.
func (s *Source) checkModuleDir(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return s.Store.Check(dir, "go.mod", "go.sum", "main.go")
}

// generatedModuleReady reports whether the module generated earlier in dir
// builds pkg: it was tidied (it has a go.sum) and declares pkg as a tool.
// One generated before pkg was a component lacks its dependencies' go.sum
// entries, and is generated again.
func generatedModuleReady(dir, pkg string) bool {
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err != nil {
		return false
	}
	f, err := goproxy.ReadGoMod(filepath.Join(dir, "go.mod"))
	return err == nil && declaresTool(f, pkg)
}

// generateModule writes the build module for c's module at version into dir
// and tidies it, which resolves its dependencies through the Go module
// proxy. The module declares the main packages of the components the
// harness knows of that module, of c, and of those an earlier module in
// dir declared, as tools. A module whose tidy failed is left without a
// go.sum, so that it is not taken as ready.
func generateModule(ctx context.Context, proxy *goproxy.Client, out io.Writer, c component.Component, version versions.Version, dir string) error {
	fmt.Fprintf(out, "%s: preparing a build module for %s@v%s in %s\n", c.Name, c.Module, version, dir)
	if _, err := proxy.Download(ctx, c.Module, version); err != nil {
		return err
	}
	var tools []string
	if old, err := goproxy.ReadGoMod(filepath.Join(dir, "go.mod")); err == nil {
		for _, t := range old.Tool {
			tools = append(tools, t.Path)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	staging, err := stagingReplacements(ctx, proxy, c.Module, version)
	if err != nil {
		return err
	}
	for _, k := range append(component.Known(), c) {
		if k.Module == c.Module && k.Main() == nil && !slices.Contains(tools, k.Package) {
			tools = append(tools, k.Package)
		}
	}
	data, err := buildModFile(c.Module, version, staging, tools)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), data, 0o644); err != nil {
		return err
	}
	if _, err := goproxy.Go(ctx, dir, "mod", "tidy"); err != nil {
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
func stagingReplacements(ctx context.Context, proxy *goproxy.Client, module string, version versions.Version) ([]string, error) {
	if module != component.KubeAPIServer.Module {
		return nil, nil
	}
	if err := proxy.Serves(ctx, version); err != nil {
		return nil, err
	}
	mod, err := proxy.KubeGoMod(ctx, version)
	if err != nil {
		return nil, err
	}
	return mod.Staging, mod.StagingErr
}

// buildModFile is the go.mod of a build module for module at version. It
// requires module; it replaces each of staging, since k8s.io/kubernetes
// requires its staging modules at v0.0.0 and replaces them with ./staging,
// which a module depending on it must do with their published
// v0.<minor>.<patch>; and it declares tools as tools, the main packages
// of the components it builds, so that tidying keeps what they need.
func buildModFile(module string, version versions.Version, staging, tools []string) ([]byte, error) {
	mf := &modfile.File{}
	_ = mf.AddModuleStmt("kubeharness.local/controlplane")
	_ = mf.AddGoStmt("1.26")
	_ = mf.AddRequire(module, "v"+version.String())
	for _, m := range staging {
		_ = mf.AddReplace(m, "", m, "v"+goproxy.StagingVersion(version).String())
	}
	for _, t := range tools {
		_ = mf.AddTool(t)
	}
	return mf.Format()
}

// mainModule writes the module c's own main is built in for version: a
// copy of modDir, the build module of c.Package, under another module path
// and with c's own main as its main package, so that the main compiles against
// exactly the dependencies (and the Go build cache) of the binary it is
// built beside. It returns the module's directory, one per component and
// version in the generated modules' directory, written anew each build.
func (s *Source) mainModule(c component.Component, version versions.Version, modDir string) (string, error) {
	f, err := goproxy.ReadGoMod(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", err
	}
	if err := f.AddModuleStmt(c.MainModulePath()); err != nil {
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
	dir := s.Store.SourceDir(c.Name + "@" + version.String())
	if err := s.checkModuleDir(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"go.mod": gomod, "go.sum": gosum, "main.go": c.MainSource()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// declaresTool reports whether f declares pkg as a tool. A generated build
// module that predates a component does not, and lacks the go.sum entries
// of its dependencies.
func declaresTool(f *modfile.File, pkg string) bool {
	for _, t := range f.Tool {
		if t.Path == pkg {
			return true
		}
	}
	return false
}
