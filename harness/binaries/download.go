package binaries

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"time"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// archiveDir is where an envtest archive keeps its binaries.
const archiveDir = "controller-tools/envtest"

const (
	// dialTimeout bounds connecting to the index's or an archive's host,
	// so that a network that drops packets fails over to a build in
	// seconds.
	dialTimeout = 5 * time.Second
	// stallTimeout is how long a download may receive nothing before it
	// is given up.
	stallTimeout = 30 * time.Second
	// slowAfter and slowRemaining: in auto mode a download that, after
	// slowAfter, would need more than slowRemaining to finish at the rate
	// it has had is given up, since a cold build of its binaries takes
	// less. In download mode a download takes as long as it takes.
	slowAfter     = time.Minute
	slowRemaining = 10 * time.Minute
)

// defaultHTTPClient fetches indexes and archives: through the
// environment's proxy settings, with short connection and response-header
// timeouts (a body may take as long as it needs, see stallTimeout).
var defaultHTTPClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: dialTimeout}).DialContext,
	TLSHandshakeTimeout:   dialTimeout,
	ResponseHeaderTimeout: 2 * dialTimeout,
	ForceAttemptHTTP2:     true,
}}

// httpClient is HTTPClient, or defaultHTTPClient.
func (b *Builder) httpClient() *http.Client {
	if b.HTTPClient != nil {
		return b.HTTPClient
	}
	return defaultHTTPClient
}

// inArchive reports whether the envtest archive holds c.
func inArchive(c Component) bool {
	for _, a := range EnvtestComponents {
		if a.Name == c.Name {
			return true
		}
	}
	return false
}

// envtestArchive is the envtest archive of one Kubernetes version for this
// platform as one Build uses it: fetched (index, download, sha512 check)
// the first time a binary it holds is missing, at most once, kept in the
// store directory while the Build runs and removed when it ends (close).
// A failed fetch is remembered too: every binary it holds is then built,
// each saying why.
type envtestArchive struct {
	b    *Builder
	mode Mode
	kube versions.Version
	dir  string

	fetched bool
	ref     archiveRef
	path    string
	err     error
}

// get fetches the archive, once, and returns where it is.
func (a *envtestArchive) get(ctx context.Context) (archiveRef, string, error) {
	if !a.fetched {
		a.fetched = true
		a.ref, a.path, a.err = a.fetch(ctx)
	}
	return a.ref, a.path, a.err
}

func (a *envtestArchive) fetch(ctx context.Context) (archiveRef, string, error) {
	where := a.b.indexURL()
	ix, err := a.b.fetchIndex(ctx, where)
	if err != nil {
		return archiveRef{}, "", err
	}
	ref, err := ix.lookup(where, a.kube, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return archiveRef{}, "", err
	}
	path, err := a.b.downloadArchive(ctx, ref, a.dir, a.mode == ModeAuto)
	return ref, path, err
}

// close removes the downloaded archive.
func (a *envtestArchive) close() {
	if a.path != "" {
		_ = os.Remove(a.path)
	}
}

// install puts c from the archive at bin: extracted beside it, checked (a
// Kubernetes binary must report the archive's version with its commit
// stamped, as the up-to-date check wants it; etcd must run and report its
// own), renamed into place and its Origin recorded. It returns the version
// the binary reports. Nothing lands at bin unless all of that succeeds.
func (a *envtestArchive) install(ctx context.Context, c Component, bin string) (string, error) {
	ref, archive, err := a.get(ctx)
	if err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	_ = os.Remove(tmp)
	size, sum, err := extractBinary(archive, c.Name, tmp)
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("%s: %w", ref.Name, err)
	}
	got, err := runVersion(ctx, tmp, c)
	if err == nil && c.Module != Etcd.Module && !a.b.upToDate(ctx, tmp, c, a.kube) {
		err = fmt.Errorf("it reports Kubernetes %s, or no git commit, where %s was asked for", got, a.kube)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("the %s in %s is not usable: %v", c.Name, ref.Name, err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return got, writeOrigin(bin, Origin{How: OriginDownloaded, Kubernetes: a.kube, Source: ref.URL, ArchiveSHA512: ref.SHA512, Size: size, SHA512: sum})
}

// current reports whether bin is a binary downloaded from the envtest
// archive of this Kubernetes version, still the very file downloaded, and
// working; got is the version it reports. In auto and download mode such a
// binary is up to date: an etcd downloaded with Kubernetes stays although
// versions.yaml pins another etcd for builds. In build mode nothing is
// current for having been downloaded.
func (a *envtestArchive) current(ctx context.Context, c Component, bin string) (got string, ok bool) {
	if a.mode == ModeBuild {
		return "", false
	}
	o, ok := ReadOrigin(filepath.Dir(bin), filepath.Base(bin))
	if !ok || o.How != OriginDownloaded || o.Kubernetes != a.kube || !o.describes(bin) {
		return "", false
	}
	got, err := BinaryVersion(ctx, bin, c)
	return got, err == nil
}

// downloadArchive downloads ref into a new file in dir and returns its
// path once its sha512 matches the index's; otherwise the file is removed
// and the error says why. A download that goes on for more than
// progressEvery reports its progress; with giveUpSlow one too slow to be
// worth waiting for (tooSlow) is given up.
func (b *Builder) downloadArchive(ctx context.Context, ref archiveRef, dir string, giveUpSlow bool) (path string, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.URL, http.NoBody)
	if err != nil {
		return "", err
	}
	resp, err := b.httpClient().Do(req)
	if err != nil {
		return "", fmt.Errorf("downloading %s from %s: %w", ref.Name, ref.URL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("downloading %s from %s: %s", ref.Name, ref.URL, resp.Status)
	}
	f, err := os.CreateTemp(dir, ".download-*.tar.gz")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	start := time.Now()
	fmt.Fprintf(b.out(), "%s: downloading %s from %s\n", ref.Name, megabytes(resp.ContentLength), ref.URL)
	stall := time.AfterFunc(stallTimeout, func() {
		cancel(fmt.Errorf("nothing received for %s", stallTimeout))
	})
	defer stall.Stop()
	h := sha512.New()
	p := &progress{out: b.out(), name: ref.Name, total: resp.ContentLength, start: start, last: start, giveUpSlow: giveUpSlow,
		onWrite: func() { stall.Reset(stallTimeout) }}
	if _, err = io.Copy(io.MultiWriter(f, h, p), resp.Body); err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return "", fmt.Errorf("downloading %s from %s: %w", ref.Name, ref.URL, err)
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != ref.SHA512 {
		err = fmt.Errorf("the sha512 of %s from %s does not match the index: it is %s…, the index says %s…; nothing from it is installed",
			ref.Name, ref.URL, sum[:16], ref.SHA512[:16])
		return "", err
	}
	fmt.Fprintf(b.out(), "%s: %s in %s, sha512 matches the index\n", ref.Name, megabytes(p.done), time.Since(start).Round(100*time.Millisecond))
	return f.Name(), nil
}

// progress counts what a download has written and, every progressEvery,
// says how far it is; with giveUpSlow it fails the download once tooSlow
// says so.
type progress struct {
	out         io.Writer
	name        string
	total, done int64
	start, last time.Time
	giveUpSlow  bool
	onWrite     func()
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	p.onWrite()
	now := time.Now()
	if p.giveUpSlow {
		if left, slow := tooSlow(p.done, p.total, now.Sub(p.start)); slow {
			return 0, fmt.Errorf("too slow: %s of %s in %s, about %s to go, longer than a build takes",
				megabytes(p.done), megabytes(p.total), now.Sub(p.start).Round(time.Second), left.Round(time.Minute))
		}
	}
	if now.Sub(p.last) >= progressEvery {
		p.last = now
		of := ""
		if p.total > 0 {
			of = " of " + megabytes(p.total)
		}
		fmt.Fprintf(p.out, "  %s: %s%s, %s\n", p.name, megabytes(p.done), of, now.Sub(p.start).Round(time.Second))
	}
	return len(b), nil
}

// tooSlow reports whether a download of total bytes (0 or less: unknown)
// that has received done of them in elapsed would, at that rate, need more
// than slowRemaining to finish (left), once it has run for slowAfter.
func tooSlow(done, total int64, elapsed time.Duration) (left time.Duration, slow bool) {
	if elapsed < slowAfter || total <= 0 || done >= total {
		return 0, false
	}
	if done <= 0 {
		return slowRemaining + 1, true
	}
	left = time.Duration(float64(elapsed) * float64(total-done) / float64(done))
	return left, left > slowRemaining
}

// megabytes formats a byte count; a negative one (unknown) as "an archive".
func megabytes(n int64) string {
	if n < 0 {
		return "an archive"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// extractBinary writes the regular file controller-tools/envtest/name of
// the tar.gz archive to dst, a new executable file, and returns its size
// and sha512. Nothing else of the archive is written anywhere.
func extractBinary(archive, name, dst string) (size int64, sum string, err error) {
	f, err := os.Open(archive)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return 0, "", fmt.Errorf("not a gzip archive: %w", err)
	}
	defer gz.Close()
	want := archiveDir + "/" + name
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return 0, "", fmt.Errorf("holds no %s", want)
		}
		if err != nil {
			return 0, "", fmt.Errorf("reading the archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg || path.Clean(hdr.Name) != want {
			continue
		}
		return writeExecutable(tr, dst)
	}
}

// writeExecutable writes r to dst, a new executable file, and returns its
// size and sha512.
func writeExecutable(r io.Reader, dst string) (int64, string, error) {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return 0, "", err
	}
	h := sha512.New()
	n, err := io.Copy(io.MultiWriter(out, h), r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("writing %s: %w", dst, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
