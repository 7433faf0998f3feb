// Package archivetest serves fake envtest archives and a release index
// naming them, as controller-tools publishes them, for the tests of
// harness/binaries and its envtest archive source.
package archivetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// Dir is where an envtest archive keeps its binaries.
const Dir = "controller-tools/envtest"

// The binaries of a fake envtest archive of Kubernetes 1.37.1: scripts
// that answer the version flags the way the real binaries do, a git commit
// included.
const (
	Etcd      = "#!/bin/sh\necho 'etcd Version: 3.6.4'\necho 'Git SHA: 0123abc'\n"
	APIServer = "#!/bin/sh\necho 'Kubernetes v1.37.1'\necho 'GitCommit:\"0123abc\"'\n"
	Kubectl   = "#!/bin/sh\necho 'Client Version: v1.37.1'\necho '\"gitCommit\": \"0123abc\"'\n"
)

// Binaries is what a good archive of Kubernetes 1.37.1 holds.
func Binaries() map[string]string {
	return map[string]string{"etcd": Etcd, "kube-apiserver": APIServer, "kubectl": Kubectl}
}

// Name is the name controller-tools gives the envtest archive of
// Kubernetes v for this platform.
func Name(v versions.Version) string {
	return fmt.Sprintf("envtest-v%s-%s-%s.tar.gz", v, runtime.GOOS, runtime.GOARCH)
}

// TarGz is an archive laid out as controller-tools' envtest archives:
// files below controller-tools/envtest/, here with a directory entry and a
// file that is not a binary besides them.
func TarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	write := func(hdr *tar.Header, body string) {
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	write(&tar.Header{Name: Dir + "/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	write(&tar.Header{Name: Dir + "/NOTICE", Typeflag: tar.TypeReg, Mode: 0o644, Size: 6}, "notice")
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		write(&tar.Header{Name: Dir + "/" + name, Typeflag: tar.TypeReg, Mode: 0o555, Size: int64(len(files[name]))}, files[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// SHA512Hex is the sha512 of b in hex, as the index gives it.
func SHA512Hex(b []byte) string {
	sum := sha512.Sum512(b)
	return hex.EncodeToString(sum[:])
}

// Server serves an envtest index at /envtest-releases.yaml and the
// archives it names, over https (its Client trusts it) or plain http, and
// counts what it is asked.
type Server struct {
	*httptest.Server
	// Requests counts every request; ArchiveGets those for archives.
	Requests, ArchiveGets atomic.Int64
	// ContentLength, when set, has archives served with their length,
	// as GitHub serves them; otherwise a large one is sent in chunks.
	ContentLength atomic.Bool

	mu    sync.Mutex
	index strings.Builder
	files map[string][]byte
}

// NewServer is a Server over https.
func NewServer(t testing.TB) *Server {
	t.Helper()
	return start(t, httptest.NewTLSServer)
}

// NewPlainServer is a Server over plain http.
func NewPlainServer(t testing.TB) *Server {
	t.Helper()
	return start(t, httptest.NewServer)
}

func start(t testing.TB, serve func(http.Handler) *httptest.Server) *Server {
	t.Helper()
	s := &Server{files: map[string][]byte{}}
	s.index.WriteString("releases:\n")
	s.Server = serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.URL.Path == "/envtest-releases.yaml" {
			_, _ = io.WriteString(w, s.index.String())
			return
		}
		body, ok := s.files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.ArchiveGets.Add(1)
		if s.ContentLength.Load() {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// IndexURL is where the server serves its index.
func (s *Server) IndexURL() string { return s.URL + "/envtest-releases.yaml" }

// Publish lists the archive of Kubernetes v for this platform in the index
// with the sha512 of indexed, and serves served as that archive.
func (s *Server) Publish(v string, indexed, served []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := Name(versions.MustParse(v))
	fmt.Fprintf(&s.index, "  v%s:\n    %s:\n      hash: %s\n      selfLink: %s/%s\n", v, name, SHA512Hex(indexed), s.URL, name)
	s.files[name] = served
}

// IndexLine adds text to the index as it is.
func (s *Server) IndexLine(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index.WriteString(text)
}
