package binaries

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/harness/versions"
)

const (
	// DefaultIndexURL is controller-tools' envtest release index, the one
	// setup-envtest reads.
	DefaultIndexURL = "https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"
	// IndexEnv is the environment variable that names another index (a
	// mirror) for every Builder that names none.
	IndexEnv = "KUBEHARNESS_ENVTEST_INDEX"
)

const (
	// indexTimeout bounds fetching the index, connection included: where
	// the index cannot be reached, auto mode builds after at most this.
	indexTimeout = 10 * time.Second
	// indexMaxBytes bounds the index read: the real one is tens of KB.
	indexMaxBytes = 16 << 20
)

// envtestIndex is an envtest release index as controller-tools publishes
// it: releases, by Kubernetes version ("v1.37.1"), each mapping archive
// names ("envtest-v1.37.1-linux-amd64.tar.gz") to the archive's sha512
// (hex) and where it is (selfLink).
type envtestIndex struct {
	Releases map[string]map[string]indexArchive `json:"releases"`
}

type indexArchive struct {
	Hash     string `json:"hash"`
	SelfLink string `json:"selfLink"`
}

// archiveRef is the archive of one version and platform the index names.
type archiveRef struct {
	// Name is the archive's file name.
	Name string
	// URL is where it is: its selfLink, resolved against the index's URL.
	URL string
	// SHA512 is its sha512 as the index gives it, in lower-case hex.
	SHA512 string
}

// archiveName is the name controller-tools gives the envtest archive of
// Kubernetes v for a platform.
func archiveName(v versions.Version, goos, goarch string) string {
	return fmt.Sprintf("envtest-v%s-%s-%s.tar.gz", v, goos, goarch)
}

// archiveNameRE reads an archive name back: version, OS, architecture.
var archiveNameRE = regexp.MustCompile(`^envtest-v([0-9]+\.[0-9]+\.[0-9]+)-([a-z0-9]+)-([a-z0-9]+)\.tar\.gz$`)

// sha512HexRE is a sha512 in hex, as the index gives it.
var sha512HexRE = regexp.MustCompile(`^[0-9a-fA-F]{128}$`)

// indexURL is the index the Builder reads: Index, else $KUBEHARNESS_ENVTEST_INDEX,
// else DefaultIndexURL.
func (b *Builder) indexURL() string {
	if b.Index != "" {
		return b.Index
	}
	if env := os.Getenv(IndexEnv); env != "" {
		return env
	}
	return DefaultIndexURL
}

// fetchIndex fetches and parses the index at where, within indexTimeout.
func (b *Builder) fetchIndex(ctx context.Context, where string) (*envtestIndex, error) {
	ctx, cancel := context.WithTimeout(ctx, indexTimeout)
	defer cancel()
	u, err := url.Parse(where)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("envtest index %q is not an http(s) URL (set $%s to one)", where, IndexEnv)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := b.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("envtest index %s: %w", where, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("envtest index %s: %s", where, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, indexMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("envtest index %s: %w", where, err)
	}
	if len(data) > indexMaxBytes {
		return nil, fmt.Errorf("envtest index %s is larger than %d MB: not an index", where, indexMaxBytes>>20)
	}
	var ix envtestIndex
	if err := yaml.Unmarshal(data, &ix); err != nil {
		return nil, fmt.Errorf("envtest index %s does not parse: %w", where, err)
	}
	if len(ix.Releases) == 0 {
		return nil, fmt.Errorf("envtest index %s lists no releases", where)
	}
	return &ix, nil
}

// lookup finds the archive of Kubernetes v for goos/goarch in the index,
// which was fetched from where. Its error says what the index does hold
// when it lacks v; it refuses an entry whose
// hash is no sha512 or whose selfLink is no http(s) URL.
func (ix *envtestIndex) lookup(where string, v versions.Version, goos, goarch string) (archiveRef, error) {
	name := archiveName(v, goos, goarch)
	var found *indexArchive
	var listed []versions.Version
	for _, release := range ix.Releases {
		for archive, entry := range release {
			m := archiveNameRE.FindStringSubmatch(archive)
			if m == nil || m[2] != goos || m[3] != goarch {
				continue
			}
			if archive == name {
				found = &entry
			}
			if lv, err := versions.Parse(m[1]); err == nil {
				listed = append(listed, lv)
			}
		}
	}
	if found == nil {
		msg := fmt.Sprintf("the envtest index %s has no archive for Kubernetes %s on %s/%s", where, v, goos, goarch)
		if len(listed) > 0 {
			msg += fmt.Sprintf(" (newest there: %s)", slices.MaxFunc(listed, versions.Version.Compare))
		}
		return archiveRef{}, errors.New(msg)
	}
	if !sha512HexRE.MatchString(found.Hash) {
		return archiveRef{}, fmt.Errorf("the envtest index %s gives %s no sha512 (hash %q); nothing unverified is installed", where, name, found.Hash)
	}
	base, err := url.Parse(where)
	if err != nil {
		return archiveRef{}, err
	}
	link, err := url.Parse(found.SelfLink)
	if err != nil || found.SelfLink == "" {
		return archiveRef{}, fmt.Errorf("the envtest index %s gives %s no usable selfLink (%q)", where, name, found.SelfLink)
	}
	abs := base.ResolveReference(link)
	if abs.Scheme != "http" && abs.Scheme != "https" {
		return archiveRef{}, fmt.Errorf("the envtest index %s links %s to %s, not an http(s) URL", where, name, abs)
	}
	sum, _ := hex.DecodeString(found.Hash)
	return archiveRef{Name: name, URL: abs.String(), SHA512: hex.EncodeToString(sum)}, nil
}

// unwrapURLError is what went wrong with a request, without the method and
// URL a *url.Error repeats: the messages that quote it name the URL once.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
