package envtestarchive

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
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/harness/versions"
)

const (
	// DefaultIndexURL is controller-tools' envtest release index, the one
	// setup-envtest reads.
	DefaultIndexURL = "https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"
	// IndexEnv is the environment variable that names another index (a
	// mirror) for every Source that names none.
	IndexEnv = "KUBEHARNESS_ENVTEST_INDEX"
	// IndexInsecureEnv, set to 1 (or true), lets every Source read an
	// index over plain http:// (Source.InsecureIndex).
	IndexInsecureEnv = "KUBEHARNESS_ENVTEST_INDEX_INSECURE"
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
	// Index is the URL of the index, which the sha512 comes from.
	Index string
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

// indexURL is the index the Source reads: Index, else $KUBEHARNESS_ENVTEST_INDEX,
// else DefaultIndexURL.
func (s *Source) indexURL() string {
	if s.Index != "" {
		return s.Index
	}
	if env := os.Getenv(IndexEnv); env != "" {
		return env
	}
	return DefaultIndexURL
}

// insecureIndex reports whether the Source reads an index over plain
// http: InsecureIndex, else $KUBEHARNESS_ENVTEST_INDEX_INSECURE.
func (s *Source) insecureIndex() bool {
	if s.InsecureIndex {
		return true
	}
	insecure, err := strconv.ParseBool(os.Getenv(IndexInsecureEnv))
	return err == nil && insecure
}

// plainHTTPError refuses an index at where that is, or redirects to (to),
// plain http, without insecureIndex: the index is where the sha512 an
// archive is checked against comes from, so whoever can change what
// crosses the network could give any archive with a matching sha512.
type plainHTTPError struct{ where, to string }

func (e *plainHTTPError) Error() string {
	what := "is plain http"
	if e.to != "" {
		what = "redirects to " + e.to + ", plain http"
	}
	return fmt.Sprintf("envtest index %s %s: the sha512 an archive is checked against comes from the index, so whoever can change the traffic could serve any archive with a matching sha512; use an https:// URL, or set %s=1 to accept it anyway", e.where, what, IndexInsecureEnv)
}

// fetchIndex fetches and parses the index at where, within indexTimeout.
// Unless insecureIndex, it must be https://, and so must every URL it
// redirects to.
func (s *Source) fetchIndex(ctx context.Context, where string) (*envtestIndex, error) {
	ctx, cancel := context.WithTimeout(ctx, indexTimeout)
	defer cancel()
	u, err := url.Parse(where)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("envtest index %q is not an http(s) URL (set $%s to one)", where, IndexEnv)
	}
	client := *s.httpClient()
	if s.insecureIndex() {
		if u.Scheme == "http" {
			fmt.Fprintf(s.out(), "envtest index %s: plain http, accepted as %s says: the sha512 archives are checked against comes from it, unprotected on the way\n", where, IndexInsecureEnv)
		}
	} else {
		if u.Scheme != "https" {
			return nil, &plainHTTPError{where: where}
		}
		next := client.CheckRedirect
		client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != "https" {
				return &plainHTTPError{where: where, to: req.URL.String()}
			}
			if next != nil {
				return next(req, via)
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	var plain *plainHTTPError
	if errors.As(err, &plain) {
		return nil, plain
	}
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
	return archiveRef{Name: name, URL: abs.String(), SHA512: hex.EncodeToString(sum), Index: where}, nil
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
