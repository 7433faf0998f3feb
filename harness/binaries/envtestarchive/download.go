package envtestarchive

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
	"runtime"
	"time"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
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

// What a download and its extraction may grow to, variables so that tests
// can lower them. An archive that goes past one is refused there, before
// it fills the disk: a gzip bomb of a few MB would otherwise unpack to GBs.
var (
	// maxArchiveBytes caps a download; the real envtest archives are
	// tens of MB.
	maxArchiveBytes int64 = 1 << 30
	// maxUnpackedBytes caps what is unpacked of an archive while looking
	// for one binary; the real archives unpack to a few hundred MB.
	maxUnpackedBytes int64 = 1 << 30
	// maxBinaryBytes caps one binary extracted; the largest real one,
	// kube-apiserver, is 100 to 150 MB.
	maxBinaryBytes int64 = 512 << 20
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
func (s *Source) httpClient() *http.Client {
	if s.HTTPClient != nil {
		return s.HTTPClient
	}
	return defaultHTTPClient
}

// Holds reports whether the envtest archive holds c: etcd, kube-apiserver
// and kubectl.
func Holds(c component.Component) bool {
	for _, a := range component.EnvtestComponents {
		if a.Name == c.Name {
			return true
		}
	}
	return false
}

// archive is the envtest archive of one Kubernetes version for this
// platform as one Provide uses it: fetched (index, download, sha512 check)
// the first time a binary it holds is wanted, at most once, kept in the
// store directory while Provide runs, open and locked
// (store.CreatePartial), and removed when it ends (close). A failed fetch
// is remembered too: every binary it holds is then left to the next
// source, each saying why.
type archive struct {
	s    *Source
	kube versions.Version
	dir  string

	fetched bool
	ref     archiveRef
	file    *os.File
	err     error
}

// get fetches the archive, once, and returns it, open.
func (a *archive) get(ctx context.Context) (archiveRef, *os.File, error) {
	if !a.fetched {
		a.fetched = true
		a.ref, a.file, a.err = a.fetch(ctx)
	}
	return a.ref, a.file, a.err
}

func (a *archive) fetch(ctx context.Context) (archiveRef, *os.File, error) {
	where := a.s.indexURL()
	ix, err := a.s.fetchIndex(ctx, where)
	if err != nil {
		return archiveRef{}, nil, err
	}
	ref, err := ix.lookup(where, a.kube, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return archiveRef{}, nil, err
	}
	f, err := a.s.downloadArchive(ctx, ref, a.dir, !a.s.Strict)
	return ref, f, err
}

// close removes the downloaded archive, and only then lets go of its lock,
// so that no other Provide takes it for one a killed run left.
func (a *archive) close() {
	if a.file != nil {
		_ = os.Remove(a.file.Name())
		_ = a.file.Close()
	}
}

// install puts c from the archive at bin: extracted beside it, checked (a
// Kubernetes binary must report the archive's version with its commit
// stamped, as the up-to-date check wants it; etcd must run and report its
// own), renamed into place and its Origin recorded. It returns the version
// the binary reports. Nothing lands at bin unless all of that succeeds.
func (a *archive) install(ctx context.Context, c component.Component, bin string) (string, error) {
	ref, file, err := a.get(ctx)
	if err != nil {
		return "", err
	}
	fi, err := file.Stat()
	if err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	_ = os.Remove(tmp)
	size, sum, err := extractBinary(file, fi.Size(), c.Name, tmp)
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("%s: %w", ref.Name, err)
	}
	got, err := component.RunVersion(ctx, tmp, c)
	if err == nil && !c.IsEtcd() && !component.UpToDate(ctx, tmp, c, a.kube) {
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
	return got, store.WriteOrigin(bin, store.Origin{How: store.OriginDownloaded, Kubernetes: a.kube, Source: ref.URL, Index: ref.Index, ArchiveSHA512: ref.SHA512, Size: size, SHA512: sum})
}

// downloadArchive downloads ref into a new file in dir and returns it,
// open and locked (lockPartial) until it is closed, once its sha512
// matches the one the index lists; otherwise the file is removed and the
// error says why. A download that goes on for more than progressEvery
// reports its progress; with giveUpSlow one too slow to be worth waiting
// for (tooSlow) is given up; one larger than maxArchiveBytes is given up
// there.
func (s *Source) downloadArchive(ctx context.Context, ref archiveRef, dir string, giveUpSlow bool) (file *os.File, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.URL, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s from %s: %w", ref.Name, ref.URL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading %s from %s: %s", ref.Name, ref.URL, resp.Status)
	}
	if resp.ContentLength > maxArchiveBytes {
		return nil, fmt.Errorf("downloading %s from %s: it is %s, more than the %s an envtest archive may be", ref.Name, ref.URL, megabytes(resp.ContentLength), megabytes(maxArchiveBytes))
	}
	f, err := store.CreatePartial(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
			_ = f.Close()
		}
	}()
	start := time.Now()
	fmt.Fprintf(s.out(), "%s: downloading %s from %s\n", ref.Name, megabytes(resp.ContentLength), ref.URL)
	stall := time.AfterFunc(stallTimeout, func() {
		cancel(fmt.Errorf("nothing received for %s", stallTimeout))
	})
	defer stall.Stop()
	h := sha512.New()
	p := &progress{out: s.out(), name: ref.Name, total: resp.ContentLength, start: start, last: start, giveUpSlow: giveUpSlow,
		onWrite: func() { stall.Reset(stallTimeout) }}
	if _, err = io.Copy(io.MultiWriter(f, h, p), io.LimitReader(resp.Body, maxArchiveBytes+1)); err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return nil, fmt.Errorf("downloading %s from %s: %w", ref.Name, ref.URL, err)
	}
	if p.done > maxArchiveBytes {
		return nil, fmt.Errorf("downloading %s from %s: it goes on past %s, more than an envtest archive may be; given up", ref.Name, ref.URL, megabytes(maxArchiveBytes))
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != ref.SHA512 {
		err = fmt.Errorf("the sha512 of %s from %s does not match the index: it is %s…, the index says %s…; nothing from it is installed",
			ref.Name, ref.URL, sum[:16], ref.SHA512[:16])
		return nil, err
	}
	fmt.Fprintf(s.out(), "%s: %s in %s, sha512 matches the index's (the checksum comes from %s)\n", ref.Name, megabytes(p.done), time.Since(start).Round(100*time.Millisecond), ref.Index)
	return f, nil
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
// the tar.gz archive (size bytes) to dst, a new executable file, and
// returns its size and sha512. Nothing else of the archive is written
// anywhere. An archive that unpacks to more than maxUnpackedBytes before
// name, or whose name is larger than maxBinaryBytes, is refused there: a
// binary too large is refused by its header, before anything is written.
func extractBinary(archive io.ReaderAt, size int64, name, dst string) (int64, string, error) {
	gz, err := gzip.NewReader(io.NewSectionReader(archive, 0, size))
	if err != nil {
		return 0, "", fmt.Errorf("not a gzip archive: %w", err)
	}
	defer gz.Close()
	want := archiveDir + "/" + name
	tr := tar.NewReader(&cappedReader{r: gz, left: maxUnpackedBytes})
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
		if hdr.Size > maxBinaryBytes {
			return 0, "", fmt.Errorf("its %s is %s, more than the %s a control-plane binary may be: not extracted", want, megabytes(hdr.Size), megabytes(maxBinaryBytes))
		}
		return writeExecutable(tr, dst, maxBinaryBytes)
	}
}

// errUnpackedTooLarge is what reading past maxUnpackedBytes of an archive
// fails with.
var errUnpackedTooLarge = errors.New("it unpacks to more than an envtest archive may")

// cappedReader reads r until left bytes are read, then fails with
// errUnpackedTooLarge: it stops a gzip bomb where it passes the cap.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w (%s)", errUnpackedTooLarge, megabytes(maxUnpackedBytes))
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// writeExecutable writes r to dst, a new executable file, and returns its
// size and sha512. When r holds more than limit bytes it writes limit of
// them, removes dst and fails.
func writeExecutable(r io.Reader, dst string, limit int64) (int64, string, error) {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return 0, "", err
	}
	h := sha512.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, limit))
	if err == nil && n == limit {
		var one [1]byte
		if _, more := io.ReadFull(r, one[:]); more == nil {
			err = fmt.Errorf("it is larger than %s, more than a control-plane binary may be", megabytes(limit))
		}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst)
		return 0, "", fmt.Errorf("writing %s: %w", dst, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
