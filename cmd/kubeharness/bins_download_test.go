package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// archived is what the test's envtest archive of Kubernetes 1.37.1 holds:
// scripts answering the version flags as the real binaries do.
var archived = map[string]string{
	"etcd":           "#!/bin/sh\necho 'etcd Version: 3.6.4'\n",
	"kube-apiserver": "#!/bin/sh\necho 'Kubernetes v1.37.1'\necho 'GitCommit:\"0123abc\"'\n",
	"kubectl":        "#!/bin/sh\necho 'Client Version: v1.37.1'\necho '\"gitCommit\": \"0123abc\"'\n",
}

// serveEnvtestIndex serves an envtest index naming one archive of
// Kubernetes 1.37.1 for this platform, laid out as controller-tools'
// archives, points $KUBEHARNESS_ENVTEST_INDEX at it and returns the count
// of the requests it gets.
func serveEnvtestIndex(t *testing.T) *atomic.Int64 {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if err := tw.WriteHeader(&tar.Header{Name: "controller-tools/envtest/" + name, Typeflag: tar.TypeReg, Mode: 0o555, Size: int64(len(archived[name]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(archived[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	sum := sha512.Sum512(archive)
	name := fmt.Sprintf("envtest-v1.37.1-%s-%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	index := fmt.Sprintf("releases:\n  v1.37.1:\n    %s:\n      hash: %s\n      selfLink: %s\n", name, hex.EncodeToString(sum[:]), name)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/envtest-releases.yaml":
			_, _ = w.Write([]byte(index))
		case "/" + name:
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv(binaries.IndexEnv, srv.URL+"/envtest-releases.yaml")
	// A plain-http index is refused unless asked for by name: the test
	// server's certificate is one the CLI's client does not trust.
	t.Setenv(binaries.IndexInsecureEnv, "1")
	return &requests
}

// scratchRepository makes the working directory a repository of its own,
// holding this repository's versions.yaml and nothing built, so that
// `bins` resolves 1.37.1 without the Go module proxy and reuses no
// binaries of the real bin/.
func scratchRepository(t *testing.T) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join("..", "..", versions.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for name, data := range map[string][]byte{versions.LockfileName: lock, "go.mod": []byte("module scratch\n")} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	t.Setenv(versions.EnvVar, "")
	t.Setenv(binaries.AssetsEnv, "")
}

// kubeharnessStderr runs the CLI as kubeharness does and returns what it
// printed on standard error too.
func kubeharnessStderr(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stderr
	os.Stderr = f
	var out bytes.Buffer
	code = run(context.Background(), args, &out, f)
	os.Stderr = old
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), string(data), code
}

// TestBinsUseDownloads: `bins use` in download mode takes etcd,
// kube-apiserver and kubectl from the index's archive, says so per binary,
// and `bins list` says they were downloaded.
func TestBinsUseDownloads(t *testing.T) {
	scratchRepository(t)
	requests := serveEnvtestIndex(t)
	t.Setenv(binaries.ModeEnv, "download")
	t.Setenv("PATH", "") // no go command: nothing is built
	binDir := t.TempDir()
	out, errOut, code := kubeharnessStderr(t, "bins", "use", "1.37.1", "-p", "path", "--bin-dir", binDir)
	dir := binaries.StoreDir(binDir, versions.MustParse("1.37.1"))
	if code != 0 || out != dir+"\n" {
		t.Fatalf("bins use: %q, exit status %d\n%s", out, code, errOut)
	}
	for name, content := range archived {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != content {
			t.Errorf("%s: %q, %v; want the archive's", name, got, err)
		}
	}
	archive := fmt.Sprintf("envtest-v1.37.1-%s-%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	for _, want := range []string{
		"etcd 3.6.4: downloaded from " + archive + ", sha512 verified -> " + filepath.Join(dir, "etcd") + " (versions.yaml pins etcd 3.7.3",
		"kube-apiserver 1.37.1: downloaded from " + archive + ", sha512 verified -> " + filepath.Join(dir, "kube-apiserver") + "\n",
		"kubectl 1.37.1: downloaded from " + archive,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("bins use printed no %q:\n%s", want, errOut)
		}
	}
	if got := requests.Load(); got != 2 {
		t.Errorf("bins use made %d requests, want 2: the index and the archive", got)
	}
	out, errOut, code = kubeharnessStderr(t, "bins", "list", "-i", "--bin-dir", binDir)
	if want := "(installed)  v1.37.1    " + runtime.GOOS + "/" + runtime.GOARCH + "  downloaded: etcd, kube-apiserver, kubectl\n"; code != 0 || out != want {
		t.Errorf("bins list -i: %q, exit status %d (%s); want %q", out, code, errOut, want)
	}
}

// TestBinsModes: a mode that is none fails before anything else; build
// mode never contacts the index, and says it builds (here it cannot: there
// is no go command).
func TestBinsModes(t *testing.T) {
	scratchRepository(t)
	requests := serveEnvtestIndex(t)
	t.Setenv("PATH", "")
	t.Setenv(binaries.ModeEnv, "sometimes")
	for _, args := range [][]string{{"bins", "use", "1.37.1", "--bin-dir", t.TempDir()}, {"bins", "1.37.1"}} {
		_, errOut, code := kubeharnessStderr(t, args...)
		want := `$KUBEHARNESS_BINARIES: unknown mode "sometimes": want auto (download, else build from the Go module proxy), download or build`
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s with %s=sometimes: exit status %d, %q; want 1 and %q", strings.Join(args, " "), binaries.ModeEnv, code, errOut, want)
		}
	}
	t.Setenv(binaries.ModeEnv, "build")
	_, errOut, code := kubeharnessStderr(t, "bins", "use", "1.37.1", "--bin-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "etcd 3.7.3: KUBEHARNESS_BINARIES=build; building from the Go module proxy\n") {
		t.Errorf("bins use in build mode without a go command: exit status %d, want 1 and the line that says it builds:\n%s", code, errOut)
	}
	if got := requests.Load(); got != 0 {
		t.Errorf("%d requests reached the index's server", got)
	}
}
