package envtestarchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/internal/archivetest"
)

// lowerCaps sets what a download and its extraction may grow to, for the
// test: binary, unpacked and archive bytes (0 keeps one as it is).
func lowerCaps(t *testing.T, binary, unpacked, archive int64) {
	t.Helper()
	old := [3]int64{maxBinaryBytes, maxUnpackedBytes, maxArchiveBytes}
	t.Cleanup(func() { maxBinaryBytes, maxUnpackedBytes, maxArchiveBytes = old[0], old[1], old[2] })
	for v, to := range map[*int64]int64{&maxBinaryBytes: binary, &maxUnpackedBytes: unpacked, &maxArchiveBytes: archive} {
		if to > 0 {
			*v = to
		}
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// zeroFile is a file of an archive that is size zero bytes.
type zeroFile struct {
	name string
	size int64
}

// bombTarGz is an envtest archive holding files, in order, of zeros: a
// small gzip that unpacks to what their sizes add up to.
func bombTarGz(t *testing.T, files ...zeroFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: archiveDir + "/" + f.name, Typeflag: tar.TypeReg, Mode: 0o755, Size: f.size}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(tw, zeros{}, f.size); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countingReaderAt counts the bytes read of an archive.
type countingReaderAt struct {
	r    *bytes.Reader
	read int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// countingReader counts the bytes read of r.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// TestExtractionIsCapped: a gzip bomb is stopped where it passes the cap,
// not unpacked to its end: a binary larger than maxBinaryBytes is refused
// before anything of it is written, an archive that unpacks to more than
// maxUnpackedBytes before the binary is refused there, and no more than
// the cap is ever written.
func TestExtractionIsCapped(t *testing.T) {
	const mib = 1 << 20
	lowerCaps(t, 1*mib, 4*mib, 0)
	extract := func(archive []byte) (read int64, written int64, err error) {
		r := &countingReaderAt{r: bytes.NewReader(archive)}
		dst := filepath.Join(t.TempDir(), "etcd.tmp")
		_, _, err = extractBinary(r, int64(len(archive)), "etcd", dst)
		if fi, statErr := os.Stat(dst); statErr == nil {
			written = fi.Size()
		}
		return r.read, written, err
	}

	bomb := bombTarGz(t, zeroFile{"etcd", 64 * mib})
	read, written, err := extract(bomb)
	if written > 0 {
		t.Errorf("%d bytes of the bomb were written", written)
	}
	if read > int64(len(bomb))/4 {
		t.Errorf("%d of the bomb's %d bytes were read: it was not stopped early", read, len(bomb))
	}
	wantErr(t, err, "its controller-tools/envtest/etcd is 67.1 MB, more than the 1.0 MB a control-plane binary may be: not extracted")

	bomb = bombTarGz(t, zeroFile{"NOTICE", 64 * mib}, zeroFile{"etcd", 100})
	read, written, err = extract(bomb)
	if written > 100 {
		t.Errorf("%d bytes were written", written)
	}
	if read > int64(len(bomb))/4 {
		t.Errorf("%d of the bomb's %d bytes were read: it was not stopped early", read, len(bomb))
	}
	wantErr(t, err, "reading the archive: it unpacks to more than an envtest archive may (4.2 MB)")

	// However a binary comes, no more than the cap of it is written.
	r := &countingReader{r: io.LimitReader(zeros{}, 4*mib)}
	dst := filepath.Join(t.TempDir(), "etcd.tmp")
	_, _, err = writeExecutable(r, dst, 1*mib)
	if r.read > 1*mib+1 {
		t.Errorf("%d bytes were read for a binary capped at %d", r.read, 1*mib)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("%s is left", dst)
	}
	wantErr(t, err, "writing "+dst+": it is larger than 1.0 MB, more than a control-plane binary may be")
}

// TestBombArchiveInstallsNothing: a strict Source given a bomb for an
// archive fails saying why, and leaves nothing of it in the store.
func TestBombArchiveInstallsNothing(t *testing.T) {
	const mib = 1 << 20
	lowerCaps(t, 1*mib, 4*mib, 0)
	srv := archivetest.NewServer(t)
	bomb := bombTarGz(t, zeroFile{"etcd", 16 * mib}, zeroFile{"kube-apiserver", 16 * mib}, zeroFile{"kubectl", 16 * mib})
	srv.Publish("1.37.1", bomb, bomb)
	s, out := testSource(srv)
	s.Strict = true
	dir := t.TempDir()
	_, err := s.Provide(context.Background(), v1371, dir, wants(component.EnvtestComponents...))
	wantErr(t, err, "etcd for Kubernetes 1.37.1: the download failed: ", "more than the 1.0 MB a control-plane binary may be")
	if files := dirFiles(t, dir); len(files) > 0 {
		t.Errorf("the store directory holds %v\n%s", files, out)
	}
}

// TestDownloadIsCapped: a download that goes past maxArchiveBytes is given
// up there, or before it begins when its length says so, and leaves
// nothing in the store.
func TestDownloadIsCapped(t *testing.T) {
	lowerCaps(t, 0, 0, 64<<10)
	big := make([]byte, 256<<10)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		contentLength bool
		want          string
	}{
		{"its length says so", true, "it is 0.3 MB, more than the 0.1 MB an envtest archive may be"},
		{"sent in chunks", false, "it goes on past 0.1 MB, more than an envtest archive may be; given up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := archivetest.NewServer(t)
			srv.ContentLength.Store(tc.contentLength)
			srv.Publish("1.37.1", big, big)
			s, out := testSource(srv)
			s.Strict = true
			dir := t.TempDir()
			_, err := s.Provide(context.Background(), v1371, dir, wants(component.EnvtestComponents...))
			wantErr(t, err, "the download failed: downloading ", tc.want)
			if files := dirFiles(t, dir); len(files) > 0 {
				t.Errorf("the store directory holds %v\n%s", files, out)
			}
			if strings.Contains(out.String(), "sha512 matches") {
				t.Errorf("the download went on to its end:\n%s", out)
			}
		})
	}
}
