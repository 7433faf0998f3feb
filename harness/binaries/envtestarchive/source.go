// Package envtestarchive provides etcd, kube-apiserver and kubectl from the
// official envtest archive of a Kubernetes version, as setup-envtest
// downloads it: controller-tools' release index (https only, unless told
// otherwise) names each version's archive and its sha512; the archive is
// downloaded into the store directory, checked against that sha512 before
// anything of it is used, and only the binaries wanted are extracted, each
// checked before it is renamed into place, within size caps. Source is a
// binaries.Source.
//
// By file: source.go is the Source; index.go reads the index;
// download.go downloads, checks and extracts an archive.
package envtestarchive

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// progressEvery is how often a download reports progress.
const progressEvery = 10 * time.Second

// Source provides what the envtest archive holds of the binaries wanted.
type Source struct {
	// Index is the URL of the envtest release index; empty means
	// $KUBEHARNESS_ENVTEST_INDEX, else DefaultIndexURL. An archive's
	// selfLink may be relative to it (a mirror of index and archives).
	// The index is what vouches for an archive: the sha512 a download is
	// checked against comes from it. So it must be https://.
	Index string
	// InsecureIndex accepts an index over plain http:// all the same (a
	// mirror on a network the user trusts); false means
	// $KUBEHARNESS_ENVTEST_INDEX_INSECURE, when set to 1.
	InsecureIndex bool
	// HTTPClient fetches the index and archives; nil means one with short
	// connection timeouts that honours the environment's proxy settings.
	HTTPClient *http.Client
	// Strict fails Provide when a binary the archive holds cannot be had
	// from it (a DownloadError); otherwise that binary is left to the next
	// source, and a download too slow to be worth waiting for is given up.
	Strict bool
	// Out receives progress; nil means os.Stderr.
	Out io.Writer
}

// DownloadError is a binary a Strict Source could not download.
type DownloadError struct {
	Component string
	Kube      versions.Version
	Err       error
}

func (e *DownloadError) Error() string {
	return fmt.Sprintf("%s for Kubernetes %s: the download failed: %v", e.Component, e.Kube, e.Err)
}

func (e *DownloadError) Unwrap() error { return e.Err }

// Name implements binaries.Source.
func (s *Source) Name() string { return "the envtest archive" }

func (s *Source) out() io.Writer {
	if s.Out == nil {
		return os.Stderr
	}
	return s.Out
}

// Provide implements binaries.Source: each of wants the archive holds is
// extracted from the archive of Kubernetes kube into dir, which is
// downloaded once, the first time one is wanted, and removed at the end.
// What it does not hold, and (unless Strict) what it could not provide,
// it returns, each with why.
func (s *Source) Provide(ctx context.Context, kube versions.Version, dir string, wants []component.Want) ([]component.Want, error) {
	a := &archive{s: s, kube: kube, dir: dir}
	defer a.close()
	var rest []component.Want
	for _, w := range wants {
		if !Holds(w.Component) {
			w.Why = "not in the envtest archive"
			rest = append(rest, w)
			continue
		}
		bin := filepath.Join(dir, w.Name)
		got, err := a.install(ctx, w.Component, bin)
		if err != nil {
			if s.Strict {
				return nil, &DownloadError{Component: w.Name, Kube: kube, Err: err}
			}
			w.Why = fmt.Sprintf("download unavailable (%v)", err)
			rest = append(rest, w)
			continue
		}
		note := ""
		if w.IsEtcd() && !w.Version.IsZero() && got != w.Version.String() {
			note = fmt.Sprintf(" (%s pins etcd %s for builds of Kubernetes %s; a build provides that one)", versions.LockfileName, w.Version, kube)
		}
		fmt.Fprintf(s.out(), "%s %s: downloaded from %s, sha512 verified -> %s%s\n", w.Name, got, a.ref.Name, bin, note)
	}
	return rest, nil
}

// Keeps reports whether bin is a binary downloaded from the envtest
// archive of Kubernetes kube, still the very file downloaded, and working;
// got is the version it reports. Such a binary is up to date although it
// is not the version wanted: an etcd downloaded with Kubernetes stays
// although versions.yaml pins another etcd for builds.
func (s *Source) Keeps(ctx context.Context, kube versions.Version, c component.Component, bin string) (got string, ok bool) {
	o, ok := store.ReadOrigin(filepath.Dir(bin), filepath.Base(bin))
	if !ok || o.How != store.OriginDownloaded || o.Kubernetes != kube || !o.Describes(bin) {
		return "", false
	}
	got, err := component.BinaryVersion(ctx, bin, c)
	return got, err == nil
}
