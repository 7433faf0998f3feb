package binaries

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/envtestarchive"
	"github.com/kubeharness/kubeharness/harness/binaries/gobuild"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Source is where a binary the store lacks comes from: the official envtest
// archive (envtestarchive.Source) or a build from the Go module proxy
// (gobuild.Source). Store.Provide asks its Sources in order, each for what
// the ones before it did not provide; a new way to get binaries is a new
// Source, and a Mode is an ordered list of them (Sources).
type Source interface {
	// Name says what the source is, in messages: "the envtest archive".
	Name() string
	// Provide puts into dir, the store directory of Kubernetes kube, what
	// it can of wants: each a working binary that reports the version
	// wanted (any, for a Want without one), written so that dir never
	// holds half of it, its store.Origin recorded beside it. It returns
	// the wants it did not provide, each with Why; an error ends the
	// provision.
	Provide(ctx context.Context, kube versions.Version, dir string, wants []Want) ([]Want, error)
}

// Keeper is a Source that vouches for a binary it provided before though
// it does not report the version wanted: the envtest archive's etcd, kept
// although versions.yaml pins another one for builds.
type Keeper interface {
	// Keeps reports whether bin, c in the store directory of Kubernetes
	// kube, is one the source provided for kube and still works; got is
	// the version it reports.
	Keeps(ctx context.Context, kube versions.Version, c Component, bin string) (got string, ok bool)
}

var (
	_ Source = &envtestarchive.Source{}
	_ Keeper = &envtestarchive.Source{}
	_ Source = &gobuild.Source{}
)

// Mode is where a missing binary that the official envtest archive holds
// (etcd, kube-apiserver, kubectl) comes from: which Sources, in which
// order. Binaries the archive lacks (kube-controller-manager, kubelet, …)
// are built in every mode.
type Mode string

const (
	// ModeAuto downloads the envtest archive and builds from the Go module
	// proxy when the download fails: the index cannot be reached or lacks
	// the version, or the archive does not match its sha512.
	ModeAuto Mode = "auto"
	// ModeDownload downloads the envtest archive and fails when that
	// fails.
	ModeDownload Mode = "download"
	// ModeBuild builds from the Go module proxy and contacts nothing else.
	ModeBuild Mode = "build"
)

// ModeEnv is the environment variable that sets the Mode of every Store
// that sets none; unset or empty is ModeAuto.
const ModeEnv = "KUBEHARNESS_BINARIES"

// The envtest index's settings (envtestarchive's).
const (
	// DefaultIndexURL is controller-tools' envtest release index, the one
	// setup-envtest reads.
	DefaultIndexURL = envtestarchive.DefaultIndexURL
	// IndexEnv names another index (a mirror).
	IndexEnv = envtestarchive.IndexEnv
	// IndexInsecureEnv, set to 1, accepts an index over plain http://.
	IndexInsecureEnv = envtestarchive.IndexInsecureEnv
)

// ParseMode parses a Mode; empty is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeDownload, ModeBuild:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: want auto (download, else build from the Go module proxy), download or build", s)
}

// ModeFromEnv is the Mode $KUBEHARNESS_BINARIES asks for.
func ModeFromEnv() (Mode, error) {
	m, err := ParseMode(os.Getenv(ModeEnv))
	if err != nil {
		return "", fmt.Errorf("$%s: %w", ModeEnv, err)
	}
	return m, nil
}

// Sources is the ordered list of sources mode means: auto, the envtest
// archive and then a build of what it could not provide; download, the
// archive, failing when it fails, and a build of what it lacks; build, a
// build alone. archive and build are the two sources.
func Sources(mode Mode, archive *envtestarchive.Source, build Source) []Source {
	switch mode {
	case ModeBuild:
		return []Source{build}
	case ModeDownload:
		strict := *archive
		strict.Strict = true
		return []Source{&strict, build}
	}
	return []Source{archive, build}
}

// whyNotDownloaded is what a want starts with in mode: in build mode, for
// a binary the archive holds, that the mode says to build it.
func whyNotDownloaded(mode Mode, c Component) string {
	if mode == ModeBuild && envtestarchive.Holds(c) {
		return ModeEnv + "=build"
	}
	return ""
}

// isKubeAPIServer reports whether c is kube-apiserver.
func isKubeAPIServer(c component.Component) bool { return c.Name == KubeAPIServer.Name }
