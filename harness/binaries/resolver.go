package binaries

import (
	"context"
	"io"

	"github.com/kubeharness/kubeharness/harness/binaries/gobuild"
	"github.com/kubeharness/kubeharness/harness/binaries/goproxy"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// NewResolver reads versions.yaml below root and asks the Go module proxy
// through the go command (a goproxy.Client). An empty root (outside a
// project that pins its versions) means no versions.yaml: a patch must be
// one the proxy serves, a minor is its newest patch the proxy serves, and
// a request must name a version.
func NewResolver(root string, out io.Writer) (*versions.Resolver, error) {
	lock := &versions.Lockfile{}
	if root != "" {
		var err error
		if lock, err = versions.LoadLockfile(root); err != nil {
			return nil, err
		}
	}
	return &versions.Resolver{Lock: lock, Proxy: &goproxy.Client{}, Out: out}, nil
}

// EtcdVersion is the etcd that goes with Kubernetes version: the one lock
// pins for it, else the etcd server module that version of Kubernetes
// itself depends on, as its go.mod requires it (said on out).
func EtcdVersion(ctx context.Context, lock *versions.Lockfile, version versions.Version, out io.Writer) (versions.Version, error) {
	if e, ok := lock.Lookup(version); ok {
		return e.Etcd, nil
	}
	return (&gobuild.Source{Out: out}).EtcdVersion(ctx, version)
}
