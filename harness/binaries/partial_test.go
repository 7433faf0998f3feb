//go:build unix

package binaries

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries/envtestarchive"
	"github.com/kubeharness/kubeharness/harness/internal/archivetest"
	"github.com/kubeharness/kubeharness/harness/internal/proctest"
)

// The helper process this test binary becomes with helperEnv=download:
// a Build of etcd into the store $helperStoreEnv from the index
// $KUBEHARNESS_ENVTEST_INDEX, trusting the certificate in $helperCAEnv,
// that prints its pid once its download has begun.
const (
	helperEnv      = "KUBEHARNESS_TEST_BINARIES_HELPER"
	helperStoreEnv = "KUBEHARNESS_TEST_BINARIES_STORE"
	helperCAEnv    = "KUBEHARNESS_TEST_BINARIES_CA"
)

// runHelper becomes the helper process when the environment asks for
// one (TestMain).
func runHelper() {
	if os.Getenv(helperEnv) == "download" {
		downloadUntilKilled()
	}
}

// downloadUntilKilled is the helper process: its download never ends, and
// the test kills it.
func downloadUntilKilled() {
	data, err := os.ReadFile(os.Getenv(helperCAEnv))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(data)
	out := &sayPidOnDownload{}
	b := &Store{
		Dir: os.Getenv(helperStoreEnv), Mode: ModeDownload, Out: out,
		archive: &envtestarchive.Source{Out: out, HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}},
	}
	_, err = b.Provide(context.Background(), v1371, Etcd)
	fmt.Println("the download ended:", err)
	os.Exit(1)
}

// sayPidOnDownload prints the process's pid on standard output once a
// Build reports that its download has begun.
type sayPidOnDownload struct{ said bool }

func (s *sayPidOnDownload) Write(p []byte) (int, error) {
	if !s.said && strings.Contains(string(p), ": downloading ") {
		s.said = true
		fmt.Println(os.Getpid())
	}
	return len(p), nil
}

// TestKilledDownloadIsCleanedUp: a download killed with SIGKILL leaves its
// partial file; the next Build removes it, and says so. While its process
// lives, a Build of the same directory leaves it alone.
func TestKilledDownloadIsCleanedUp(t *testing.T) {
	archive := archivetest.TarGz(t, archivetest.Binaries())
	name := archivetest.Name(v1371)
	release := make(chan struct{})
	var archiveGets atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/envtest-releases.yaml":
			fmt.Fprintf(w, "releases:\n  v1.37.1:\n    %s:\n      hash: %s\n      selfLink: %s\n", name, archivetest.SHA512Hex(archive), name)
		case "/" + name:
			w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
			if archiveGets.Add(1) > 1 {
				_, _ = w.Write(archive)
				return
			}
			// The first download, the helper's, gets half and then waits.
			_, _ = w.Write(archive[:len(archive)/2])
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	dir := StoreDir(binDir, v1371)
	t.Setenv(IndexEnv, srv.URL+"/envtest-releases.yaml")
	t.Setenv(helperStoreEnv, binDir)
	t.Setenv(helperCAEnv, ca)

	helper, _ := proctest.StartHelper(t, helperEnv+"=download")
	partials, _ := filepath.Glob(filepath.Join(dir, ".download-*.tar.gz"))
	if len(partials) != 1 {
		t.Fatalf("the helper's download is under way, but the store directory holds %v", storeFiles(t, dir))
	}
	partial := partials[0]

	var out strings.Builder
	b := &Store{Dir: binDir, Mode: ModeDownload, Out: &out, archive: &envtestarchive.Source{Out: &out, HTTPClient: srv.Client()}}
	ctx := context.Background()
	if _, err := b.Provide(ctx, v1371, Kubectl); err != nil {
		t.Fatalf("Build of kubectl beside the helper's download: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(partial); err != nil {
		t.Fatalf("a Build removed the download under way (%v):\n%s", err, out.String())
	}

	if err := helper.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(partial); err != nil {
		t.Fatalf("the killed download left nothing to clean up: %v", err)
	}
	out.Reset()
	if _, err := b.Provide(ctx, v1371, Etcd); err != nil {
		t.Fatalf("Build after the kill: %v\n%s", err, out.String())
	}
	wantLines(t, out.String(), "removed "+partial+", a partial download (")
	if files := storeFiles(t, dir); strings.Contains(strings.Join(files, " "), ".download-") {
		t.Errorf("the store directory still holds %v", files)
	}
}
