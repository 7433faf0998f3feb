// Package gobuild provides control-plane binaries by building them from
// source through the Go module proxy: k8s.io/kubernetes at the version
// wanted (its staging modules replaced by their published versions) and
// etcd's server module at its own, in a build module that requires the
// module and declares the main packages it provides as tools, with the
// version and git commit stamped in as Kubernetes' own build stamps them.
// Source is a binaries.Source.
//
// A caller may name build modules of its own, committed with its project
// (Source.Modules), used when they require the very version asked for;
// otherwise each module version's build module is generated in the store
// (<bin-dir>/k8s/.src) and tidied there once.
//
// By file: source.go is the Source and the etcd that goes with a
// Kubernetes version; module.go picks or generates the module a component
// is built in; compile.go runs `go build` with progress reports.
package gobuild

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Source builds the binaries wanted from the Go module proxy.
type Source struct {
	// Store is the store built into; its .src directory holds the build
	// modules generated.
	Store store.Store
	// Modules are build modules the caller keeps, by the module they
	// build (k8s.io/kubernetes, go.etcd.io/etcd/server/v3): the directory
	// of a go.mod that requires the module and declares the main packages
	// built as tools. One is used when it requires the version asked for;
	// nil, or any other version, means a module generated in the store.
	Modules map[string]string
	// Proxy asks the Go module proxy; nil means a new goproxy.Client.
	Proxy *goproxy.Client
	// Out receives progress; nil means os.Stderr.
	Out io.Writer

	mu sync.Mutex
	// noted are the module versions the proxy gave no commit for, said once.
	noted map[string]bool
}

// Name implements binaries.Source.
func (s *Source) Name() string { return "a build from the Go module proxy" }

func (s *Source) out() io.Writer {
	if s.Out == nil {
		return os.Stderr
	}
	return s.Out
}

func (s *Source) proxy() *goproxy.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Proxy == nil {
		s.Proxy = &goproxy.Client{}
	}
	return s.Proxy
}

// Provide implements binaries.Source: it builds each of wants into dir,
// the store directory of Kubernetes kube, and records its Origin. An etcd
// wanted at no version in particular is built at the one kube's go.mod
// requires (EtcdVersion). A build that fails fails Provide.
func (s *Source) Provide(ctx context.Context, kube versions.Version, dir string, wants []component.Want) ([]component.Want, error) {
	for _, w := range wants {
		version := w.Version
		if version.IsZero() {
			var err error
			if version, err = s.EtcdVersion(ctx, kube); err != nil {
				return nil, err
			}
		}
		why := ""
		if w.Why != "" {
			why = w.Why + "; "
		}
		fmt.Fprintf(s.out(), "%s %s: %sbuilding from the Go module proxy\n", w.Name, version, why)
		bin := filepath.Join(dir, w.Name)
		if err := s.build(ctx, w.Component, version, bin); err != nil {
			return nil, err
		}
		origin := store.Origin{How: store.OriginBuilt, Kubernetes: kube, Source: goproxy.ModVersion(w.Module, version)}
		if err := store.Record(bin, origin); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// EtcdVersion is the etcd server module that Kubernetes kube itself
// depends on, as its go.mod requires it: the etcd built for a version no
// lockfile pins one for.
func (s *Source) EtcdVersion(ctx context.Context, kube versions.Version) (versions.Version, error) {
	mod, err := s.proxy().KubeGoMod(ctx, kube)
	if err != nil {
		return versions.Version{}, err
	}
	if mod.Etcd == "" {
		return versions.Version{}, fmt.Errorf("the go.mod of Kubernetes %s names no %s; add the version to %s with an etcd version", kube, component.Etcd.Module, versions.LockfileName)
	}
	etcd, err := versions.Parse(mod.Etcd)
	if err != nil {
		return versions.Version{}, fmt.Errorf("the go.mod of Kubernetes %s requires %s %s, which kubeharness cannot build (%v); add the version to %s with an etcd version", kube, component.Etcd.Module, mod.Etcd, err, versions.LockfileName)
	}
	fmt.Fprintf(s.out(), "Kubernetes %s is not in %s; building the etcd it depends on, %s\n", kube, versions.LockfileName, etcd)
	return etcd, nil
}

// build builds c at version into bin from the Go module proxy.
func (s *Source) build(ctx context.Context, c component.Component, version versions.Version, bin string) error {
	modDir, err := s.moduleDir(ctx, c, version)
	if err != nil {
		return err
	}
	pkg := c.Package
	if c.Main() != nil {
		if modDir, err = s.mainModule(c, version, modDir); err != nil {
			return err
		}
		pkg = "."
	}
	return compile(ctx, s.out(), c, version, s.commit(ctx, c, version), modDir, pkg, bin)
}

// commit is the git commit c's module at version was tagged from, for a
// component that stamps one; a module the proxy gives no commit for is
// said once.
func (s *Source) commit(ctx context.Context, c component.Component, version versions.Version) string {
	if !c.StampsCommit() {
		return ""
	}
	commit := s.proxy().Commit(ctx, c.Module, version)
	key := goproxy.ModVersion(c.Module, version)
	s.mu.Lock()
	defer s.mu.Unlock()
	if commit == "" && !s.noted[key] {
		if s.noted == nil {
			s.noted = map[string]bool{}
		}
		s.noted[key] = true
		fmt.Fprintf(s.out(), "%s %s: the Go module proxy reports no git commit for %s; gitCommit stays empty\n", c.Name, version, key)
	}
	return commit
}
