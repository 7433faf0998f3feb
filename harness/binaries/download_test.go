package binaries

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// The binaries of a fake envtest archive: scripts that answer the version
// flags the way the real binaries do, a git commit included.
const (
	archivedEtcd      = "#!/bin/sh\necho 'etcd Version: 3.6.4'\necho 'Git SHA: 0123abc'\n"
	archivedAPIServer = "#!/bin/sh\necho 'Kubernetes v1.37.1'\necho 'GitCommit:\"0123abc\"'\n"
	archivedKubectl   = "#!/bin/sh\necho 'Client Version: v1.37.1'\necho '\"gitCommit\": \"0123abc\"'\n"
)

// archivedBinaries is what a good archive of Kubernetes 1.37.1 holds.
func archivedBinaries() map[string]string {
	return map[string]string{"etcd": archivedEtcd, "kube-apiserver": archivedAPIServer, "kubectl": archivedKubectl}
}

// v1371 is the Kubernetes version the tests provide.
var v1371 = versions.MustParse("1.37.1")

// envtestTarGz is an archive laid out as controller-tools' envtest
// archives: files below controller-tools/envtest/, here with a directory
// entry and a file that is not a binary besides them.
func envtestTarGz(t *testing.T, files map[string]string) []byte {
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
	write(&tar.Header{Name: archiveDir + "/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	write(&tar.Header{Name: archiveDir + "/NOTICE", Typeflag: tar.TypeReg, Mode: 0o644, Size: 6}, "notice")
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		write(&tar.Header{Name: archiveDir + "/" + name, Typeflag: tar.TypeReg, Mode: 0o555, Size: int64(len(files[name]))}, files[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha512Hex(b []byte) string {
	sum := sha512.Sum512(b)
	return hex.EncodeToString(sum[:])
}

// envtestServer serves an envtest index at /envtest-releases.yaml and the
// archives it names, over https (its Client trusts it), and counts what it
// is asked.
type envtestServer struct {
	*httptest.Server
	// requests counts every request; archiveGets those for archives.
	requests, archiveGets atomic.Int64
	// contentLength, when set, has archives served with their length,
	// as GitHub serves them; otherwise a large one is sent in chunks.
	contentLength atomic.Bool

	mu    sync.Mutex
	index strings.Builder
	files map[string][]byte
}

func newEnvtestServer(t *testing.T) *envtestServer {
	t.Helper()
	return startEnvtestServer(t, httptest.NewTLSServer)
}

// newPlainEnvtestServer is an envtestServer over plain http.
func newPlainEnvtestServer(t *testing.T) *envtestServer {
	t.Helper()
	return startEnvtestServer(t, httptest.NewServer)
}

func startEnvtestServer(t *testing.T, start func(http.Handler) *httptest.Server) *envtestServer {
	t.Helper()
	s := &envtestServer{files: map[string][]byte{}}
	s.index.WriteString("releases:\n")
	s.Server = start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
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
		s.archiveGets.Add(1)
		if s.contentLength.Load() {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// indexURL is where the server serves its index.
func (s *envtestServer) indexURL() string { return s.URL + "/envtest-releases.yaml" }

// publish lists the archive of Kubernetes v for this platform in the index
// with the sha512 of indexed, and serves served as that archive.
func (s *envtestServer) publish(v string, indexed, served []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := archiveName(versions.MustParse(v), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&s.index, "  v%s:\n    %s:\n      hash: %s\n      selfLink: %s/%s\n", v, name, sha512Hex(indexed), s.URL, name)
	s.files[name] = served
}

// builds records what a Builder's stand-in build step built.
type builds struct {
	mu    sync.Mutex
	names []string
}

func (bs *builds) list() []string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return slices.Clone(bs.names)
}

// builtMarker is in every binary the stand-in build step writes.
const builtMarker = "# built by the test's build step"

// step is a build step that writes a script reporting version as c does,
// with an empty git commit as the Go module proxy gives it, and records
// that it built c.
func (bs *builds) step(_ context.Context, c Component, version versions.Version, bin string) error {
	bs.mu.Lock()
	bs.names = append(bs.names, c.Name)
	bs.mu.Unlock()
	report := "Kubernetes v" + version.String() + "\nGitCommit:\"\""
	if c.Module == Etcd.Module {
		report = "etcd Version: " + version.String()
	}
	return os.WriteFile(bin, []byte("#!/bin/sh\n"+builtMarker+"\nprintf '%s\\n' '"+report+"'\n"), 0o755)
}

// testRoot is a repository root holding only the repository's
// versions.yaml, which pins etcd 3.7.3 for Kubernetes 1.37.1.
func testRoot(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", versions.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, versions.LockfileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	lock, err := versions.LoadLockfile(root)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := lock.Lookup(v1371); !ok || e.Etcd.String() != "3.7.3" {
		t.Fatalf("the tests assume versions.yaml pins etcd 3.7.3 for Kubernetes 1.37.1, not %+v", e)
	}
	return root
}

// downloadBuilder is a Builder in mode that reads srv's index and builds
// with bs's step, into a new store; root is its repository root ("" for
// none).
func downloadBuilder(t *testing.T, srv *envtestServer, mode Mode, root string, bs *builds) (*Builder, *strings.Builder) {
	t.Helper()
	out := &strings.Builder{}
	return &Builder{
		Root: root, Store: t.TempDir(), Out: out, Binaries: mode,
		Index: srv.indexURL(), HTTPClient: srv.Client(), buildStep: bs.step,
	}, out
}

// storeFiles lists dir's entries other than lock files.
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			names = append(names, e.Name())
		}
	}
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// buildAgainOffline builds components again with everything in place and
// fails if that sent the server any request.
func buildAgainOffline(ctx context.Context, t *testing.T, srv *envtestServer, b *Builder, out *strings.Builder, components ...Component) {
	t.Helper()
	requests := srv.requests.Load()
	out.Reset()
	if _, err := b.Build(ctx, v1371, components...); err != nil {
		t.Fatalf("second Build: %v\n%s", err, out)
	}
	if got := srv.requests.Load(); got != requests {
		t.Errorf("a second Build with everything in place made %d requests", got-requests)
	}
}

// wantLines fails unless out holds each of lines.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Errorf("the output lacks %q:\n%s", l, out)
		}
	}
}

// wantErr fails unless err holds each of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one with %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the error lacks %q:\n%v", p, err)
		}
	}
}

// TestDownloadProvidesArchiveBinaries: in auto mode etcd, kube-apiserver
// and kubectl come from the archive (fetched once, nothing else of it
// extracted, no go command needed), kube-controller-manager is built, each
// says so, and their origins are recorded; a second Build contacts nothing,
// and a store reusing this one takes the binaries with their records.
func TestDownloadProvidesArchiveBinaries(t *testing.T) {
	srv := newEnvtestServer(t)
	archive := envtestTarGz(t, archivedBinaries())
	srv.publish("1.36.4", archive, archive)
	srv.publish("1.37.1", archive, archive)
	t.Setenv("PATH", "") // no go command: nothing may reach the Go module proxy
	bs := &builds{}
	b, out := downloadBuilder(t, srv, ModeAuto, "", bs)
	ctx := context.Background()
	components := []Component{Etcd, KubeAPIServer, Kubectl, KubeControllerManager}
	dir, err := b.Build(ctx, v1371, components...)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out)
	}
	if diff := cmp.Diff([]string{"kube-controller-manager"}, bs.list()); diff != "" {
		t.Errorf("built (-want +got):\n%s", diff)
	}
	wantLines(t, out.String(), "kube-apiserver-test 1.37.1: not built beside a downloaded kube-apiserver")
	name := archiveName(v1371, runtime.GOOS, runtime.GOARCH)
	for bin, content := range archivedBinaries() {
		if got := readFile(t, filepath.Join(dir, bin)); got != content {
			t.Errorf("%s is %q, not the archive's", bin, got)
		}
		o, ok := ReadOrigin(dir, bin)
		want := Origin{How: OriginDownloaded, Kubernetes: v1371, Source: srv.URL + "/" + name, Index: srv.indexURL(), ArchiveSHA512: sha512Hex(archive),
			Size: int64(len(content)), SHA512: sha512Hex([]byte(content))}
		if diff := cmp.Diff(want, o); !ok || diff != "" {
			t.Errorf("origin of %s (recorded %v) (-want +got):\n%s", bin, ok, diff)
		}
	}
	if o, ok := ReadOrigin(dir, "kube-controller-manager"); !ok || o.How != OriginBuilt || o.Source != "k8s.io/kubernetes@v1.37.1" {
		t.Errorf("origin of kube-controller-manager: %+v, %v", o, ok)
	}
	wantFiles := []string{".etcd.origin", ".kube-apiserver.origin", ".kube-controller-manager.origin", ".kubectl.origin",
		"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"}
	if diff := cmp.Diff(wantFiles, storeFiles(t, dir)); diff != "" {
		t.Errorf("the store directory holds (-want +got), the archive, its NOTICE or a temporary file left:\n%s", diff)
	}
	if got := srv.archiveGets.Load(); got != 1 {
		t.Errorf("the archive was fetched %d times, want once", got)
	}
	if got, want := DescribeOrigins(dir), "downloaded: etcd, kube-apiserver, kubectl; built: kube-controller-manager"; got != want {
		t.Errorf("DescribeOrigins = %q, want %q", got, want)
	}
	wantLines(t, out.String(),
		name+": downloading 0.0 MB from "+srv.URL+"/"+name,
		name+": 0.0 MB in ",
		", sha512 matches the index's (the checksum comes from "+srv.indexURL()+")\n",
		"etcd 3.6.4: downloaded from "+name+", sha512 verified -> "+filepath.Join(dir, "etcd")+"\n",
		"kube-apiserver 1.37.1: downloaded from "+name+", sha512 verified -> "+filepath.Join(dir, "kube-apiserver")+"\n",
		"kubectl 1.37.1: downloaded from "+name,
		"kube-controller-manager 1.37.1: not in the envtest archive; building from the Go module proxy\n")

	buildAgainOffline(ctx, t, srv, b, out, components...)
	if len(bs.list()) != 1 {
		t.Errorf("a second Build built %v", bs.list()[1:])
	}
	wantLines(t, out.String(), "etcd 3.6.4: kept in", "kube-apiserver 1.37.1: up to date", "kubectl 1.37.1: up to date", "kube-controller-manager 1.37.1: up to date")

	requests := srv.requests.Load()
	other, otherOut := downloadBuilder(t, srv, ModeAuto, "", bs)
	other.Reuse = b.Store
	otherDir, err := other.Build(ctx, v1371, components...)
	if err != nil {
		t.Fatalf("Build reusing the store: %v\n%s", err, otherOut)
	}
	if got := srv.requests.Load(); got != requests {
		t.Errorf("a Build reusing another store made %d requests", got-requests)
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if o, ok := ReadOrigin(otherDir, bin); !ok || o.How != OriginDownloaded {
			t.Errorf("the reused %s lost its origin: %+v, %v", bin, o, ok)
		}
	}
	wantLines(t, otherOut.String(), "kube-apiserver 1.37.1: reused "+filepath.Join(dir, "kube-apiserver"))
}

// TestAutoFallsBackToBuild: whatever keeps a binary from being downloaded,
// auto mode builds it instead, says why on the line that says so, and
// installs nothing of an archive that failed its check.
func TestAutoFallsBackToBuild(t *testing.T) {
	good := envtestTarGz(t, archivedBinaries())
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 0xff
	withoutKubectl := envtestTarGz(t, map[string]string{"etcd": archivedEtcd, "kube-apiserver": archivedAPIServer})
	olderAPIServer := envtestTarGz(t, map[string]string{"etcd": archivedEtcd, "kube-apiserver": strings.ReplaceAll(archivedAPIServer, "1.37.1", "1.36.4"), "kubectl": archivedKubectl})
	all := []string{"etcd", "kube-apiserver", "kubectl"}
	cases := []struct {
		name       string
		serve      func(s *envtestServer)
		closed     bool
		built      []string
		why        string
		downloaded []string
	}{
		{
			name:  "the index lacks the version",
			serve: func(s *envtestServer) { s.publish("1.36.4", good, good) },
			built: all,
			why:   "has no archive for Kubernetes 1.37.1 on " + runtime.GOOS + "/" + runtime.GOARCH + " (newest there: 1.36.4)",
		},
		{
			name:  "the archive does not match its sha512",
			serve: func(s *envtestServer) { s.publish("1.37.1", good, corrupt) },
			built: all,
			why:   "does not match the index: it is " + sha512Hex(corrupt)[:16] + "…, the index says " + sha512Hex(good)[:16] + "…; nothing from it is installed",
		},
		{
			name:   "the index cannot be reached",
			closed: true,
			built:  all,
			why:    "/envtest-releases.yaml: dial tcp ",
		},
		{
			name: "the archive is missing",
			serve: func(s *envtestServer) {
				s.index.WriteString("  v1.37.1:\n    " + archiveName(v1371, runtime.GOOS, runtime.GOARCH) + ":\n      hash: " + sha512Hex(good) + "\n      selfLink: gone.tar.gz\n")
			},
			built: all,
			why:   "/gone.tar.gz: 404 Not Found",
		},
		{
			name:       "the archive lacks a binary",
			serve:      func(s *envtestServer) { s.publish("1.37.1", withoutKubectl, withoutKubectl) },
			built:      []string{"kubectl"},
			why:        "kubectl 1.37.1: download unavailable (" + archiveName(v1371, runtime.GOOS, runtime.GOARCH) + ": holds no controller-tools/envtest/kubectl); building from the Go module proxy\n",
			downloaded: []string{"etcd", "kube-apiserver"},
		},
		{
			name:       "a binary reports another version",
			serve:      func(s *envtestServer) { s.publish("1.37.1", olderAPIServer, olderAPIServer) },
			built:      []string{"kube-apiserver"},
			why:        "the kube-apiserver in " + archiveName(v1371, runtime.GOOS, runtime.GOARCH) + " is not usable: it reports Kubernetes 1.36.4",
			downloaded: []string{"etcd", "kubectl"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newEnvtestServer(t)
			if tc.serve != nil {
				tc.serve(srv)
			}
			if tc.closed {
				srv.Close()
			}
			bs := &builds{}
			b, out := downloadBuilder(t, srv, ModeAuto, testRoot(t), bs)
			dir, err := b.Build(context.Background(), v1371, EnvtestComponents...)
			if err != nil {
				t.Fatalf("Build: %v\n%s", err, out)
			}
			if diff := cmp.Diff(besideBuilt(tc.built), bs.list()); diff != "" {
				t.Errorf("built (-want +got):\n%s", diff)
			}
			wantLines(t, out.String(), tc.why)
			for _, name := range tc.built {
				version := "1.37.1"
				if name == "etcd" {
					version = "3.7.3" // what versions.yaml pins
				}
				wantLines(t, out.String(), name+" "+version+": ")
				if !strings.Contains(readFile(t, filepath.Join(dir, name)), builtMarker) {
					t.Errorf("%s is not the one built", name)
				}
				if o, ok := ReadOrigin(dir, name); !ok || o.How != OriginBuilt {
					t.Errorf("origin of %s: %+v, %v", name, o, ok)
				}
			}
			for _, name := range tc.downloaded {
				if o, ok := ReadOrigin(dir, name); !ok || o.How != OriginDownloaded {
					t.Errorf("origin of %s: %+v, %v", name, o, ok)
				}
			}
			for _, f := range storeFiles(t, dir) {
				if strings.HasSuffix(f, ".tmp") || strings.HasPrefix(f, ".download-") {
					t.Errorf("left in the store directory: %s", f)
				}
			}
		})
	}
}

// TestDownloadModeFails: download mode fails, saying why and what to do,
// where auto mode would build, and installs nothing.
func TestDownloadModeFails(t *testing.T) {
	good := envtestTarGz(t, archivedBinaries())
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-10] ^= 0xff
	for name, tc := range map[string]struct {
		indexed, served []byte
		version, want   string
	}{
		"bad sha512":      {good, corrupt, "1.37.1", "does not match the index"},
		"version missing": {good, good, "1.36.4", "has no archive for Kubernetes 1.37.1"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newEnvtestServer(t)
			srv.publish(tc.version, tc.indexed, tc.served)
			bs := &builds{}
			b, out := downloadBuilder(t, srv, ModeDownload, testRoot(t), bs)
			_, err := b.Build(context.Background(), v1371, EnvtestComponents...)
			if err == nil {
				t.Fatalf("Build succeeded:\n%s", out)
			}
			for _, want := range []string{"etcd for Kubernetes 1.37.1: KUBEHARNESS_BINARIES=download, and the download failed: ", tc.want, "set KUBEHARNESS_BINARIES=auto to build"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error %q lacks %q", err, want)
				}
			}
			if built := bs.list(); len(built) > 0 {
				t.Errorf("download mode built %v", built)
			}
			if files := storeFiles(t, StoreDir(b.Store, v1371)); len(files) > 0 {
				t.Errorf("the store directory holds %v", files)
			}
		})
	}
}

// TestBuildModeContactsNothing: build mode builds every binary, says it
// builds because the mode says so, and never asks the index's server.
func TestBuildModeContactsNothing(t *testing.T) {
	srv := newEnvtestServer(t)
	archive := envtestTarGz(t, archivedBinaries())
	srv.publish("1.37.1", archive, archive)
	bs := &builds{}
	b, out := downloadBuilder(t, srv, ModeBuild, testRoot(t), bs)
	if _, err := b.Build(context.Background(), v1371, EnvtestComponents...); err != nil {
		t.Fatalf("Build: %v\n%s", err, out)
	}
	if got := srv.requests.Load(); got != 0 {
		t.Errorf("build mode made %d requests to the index's server", got)
	}
	if diff := cmp.Diff([]string{"etcd", "kube-apiserver", "kube-apiserver-test", "kubectl"}, bs.list()); diff != "" {
		t.Errorf("built (-want +got):\n%s", diff)
	}
	wantLines(t, out.String(),
		"etcd 3.7.3: KUBEHARNESS_BINARIES=build; building from the Go module proxy\n",
		"kube-apiserver 1.37.1: KUBEHARNESS_BINARIES=build; building from the Go module proxy\n",
		"kubectl 1.37.1: KUBEHARNESS_BINARIES=build; building from the Go module proxy\n")
}

// TestDownloadedEtcdStaysCurrent: an etcd downloaded with Kubernetes is up
// to date in auto mode although versions.yaml pins another etcd for
// builds; one that is no longer the file downloaded is downloaded again;
// build mode builds the pinned etcd and keeps the downloaded Kubernetes
// binaries, which report the version asked for.
func TestDownloadedEtcdStaysCurrent(t *testing.T) {
	srv := newEnvtestServer(t)
	archive := envtestTarGz(t, archivedBinaries())
	srv.publish("1.37.1", archive, archive)
	bs := &builds{}
	b, out := downloadBuilder(t, srv, ModeAuto, testRoot(t), bs)
	ctx := context.Background()
	dir, err := b.Build(ctx, v1371, EnvtestComponents...)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out)
	}
	wantLines(t, out.String(), "etcd 3.6.4: downloaded from "+archiveName(v1371, runtime.GOOS, runtime.GOARCH)+", sha512 verified -> "+filepath.Join(dir, "etcd")+
		" (versions.yaml pins etcd 3.7.3 for builds of Kubernetes 1.37.1; KUBEHARNESS_BINARIES=build builds that one)\n")

	buildAgainOffline(ctx, t, srv, b, out, EnvtestComponents...)
	wantLines(t, out.String(), "etcd 3.6.4: up to date in "+dir+" (downloaded with Kubernetes 1.37.1)\n")

	// The same size, other bytes: the record no longer describes the file.
	etcd := filepath.Join(dir, "etcd")
	if err := os.WriteFile(etcd, []byte(strings.Replace(archivedEtcd, "0123abc", "3210abc", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := b.Build(ctx, v1371, EnvtestComponents...); err != nil {
		t.Fatalf("third Build: %v\n%s", err, out)
	}
	if got := srv.archiveGets.Load(); got != 2 {
		t.Errorf("the archive was fetched %d times, want again for the etcd replaced", got)
	}
	if got := readFile(t, etcd); got != archivedEtcd {
		t.Errorf("etcd is %q, not the archive's again", got)
	}

	requests := srv.requests.Load()
	out.Reset()
	b.Binaries = ModeBuild
	if _, err := b.Build(ctx, v1371, EnvtestComponents...); err != nil {
		t.Fatalf("Build in build mode: %v\n%s", err, out)
	}
	if diff := cmp.Diff([]string{"etcd"}, bs.list()); diff != "" {
		t.Errorf("build mode built (-want +got):\n%s", diff)
	}
	if got := srv.requests.Load(); got != requests {
		t.Errorf("build mode made %d requests", got-requests)
	}
	wantLines(t, out.String(), "etcd 3.7.3: KUBEHARNESS_BINARIES=build; building from the Go module proxy\n",
		"kube-apiserver 1.37.1: up to date", "kubectl 1.37.1: up to date")
	if o, ok := ReadOrigin(dir, "etcd"); !ok || o.How != OriginBuilt || o.Source != "go.etcd.io/etcd/server/v3@v3.7.3" {
		t.Errorf("origin of the etcd built: %+v, %v", o, ok)
	}
}

// TestModes: KUBEHARNESS_BINARIES takes auto, download and build; anything
// else fails Build before it contacts or builds anything.
func TestModes(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "download": ModeDownload, "Build": ModeBuild} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	srv := newEnvtestServer(t)
	bs := &builds{}
	b, _ := downloadBuilder(t, srv, "", testRoot(t), bs)
	t.Setenv(ModeEnv, "offline")
	_, err := b.Build(context.Background(), v1371, EnvtestComponents...)
	want := `$KUBEHARNESS_BINARIES: unknown mode "offline": want auto (download, else build from the Go module proxy), download or build`
	if err == nil || err.Error() != want {
		t.Errorf("Build with %s=offline: %v; want %q", ModeEnv, err, want)
	}
	if srv.requests.Load() != 0 || len(bs.list()) != 0 {
		t.Errorf("Build with a bad mode made %d requests and built %v", srv.requests.Load(), bs.list())
	}
	t.Setenv(ModeEnv, "build")
	if m, err := b.mode(); err != nil || m != ModeBuild {
		t.Errorf("with %s=build the Builder's mode is %q, %v", ModeEnv, m, err)
	}
}

// TestIndexLookup: the archive of a version and platform, its selfLink
// resolved against the index's URL, and entries that cannot be trusted.
func TestIndexLookup(t *testing.T) {
	hash := strings.Repeat("aB", 64)
	ix := func(selfLink, hash string) *envtestIndex {
		return &envtestIndex{Releases: map[string]map[string]indexArchive{
			"v1.37.1": {
				"envtest-v1.37.1-linux-amd64.tar.gz":  {Hash: hash, SelfLink: selfLink},
				"envtest-v1.37.1-darwin-arm64.tar.gz": {Hash: hash, SelfLink: "x"},
			},
			"v1.36.4": {"envtest-v1.36.4-linux-amd64.tar.gz": {Hash: hash, SelfLink: "y"}},
		}}
	}
	const where = "https://mirror.example/envtest/envtest-releases.yaml"
	cases := []struct {
		name, selfLink, hash, goos string
		want                       archiveRef
		wantErr                    string
	}{
		{name: "absolute selfLink", selfLink: "https://github.example/a.tar.gz", hash: hash, goos: "linux",
			want: archiveRef{Name: "envtest-v1.37.1-linux-amd64.tar.gz", URL: "https://github.example/a.tar.gz", SHA512: strings.Repeat("ab", 64), Index: where}},
		{name: "relative selfLink", selfLink: "archives/a.tar.gz", hash: hash, goos: "linux",
			want: archiveRef{Name: "envtest-v1.37.1-linux-amd64.tar.gz", URL: "https://mirror.example/envtest/archives/a.tar.gz", SHA512: strings.Repeat("ab", 64), Index: where}},
		{name: "no sha512", selfLink: "a.tar.gz", hash: "abc123", goos: "linux", wantErr: `gives envtest-v1.37.1-linux-amd64.tar.gz no sha512 (hash "abc123")`},
		{name: "not http", selfLink: "file:///etc/passwd", hash: hash, goos: "linux", wantErr: "links envtest-v1.37.1-linux-amd64.tar.gz to file:///etc/passwd, not an http(s) URL"},
		{name: "no such platform", selfLink: "a.tar.gz", hash: hash, goos: "plan9", wantErr: "has no archive for Kubernetes 1.37.1 on plan9/amd64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ix(tc.selfLink, tc.hash).lookup(where, v1371, tc.goos, "amd64")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("lookup: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lookup (-want +got):\n%s", diff)
			}
		})
	}
	_, err := ix("a", hash).lookup(where, versions.MustParse("1.38.0"), "linux", "amd64")
	if err == nil || !strings.Contains(err.Error(), "has no archive for Kubernetes 1.38.0 on linux/amd64 (newest there: 1.37.1)") {
		t.Errorf("a version the index lacks: %v", err)
	}
}

// TestDescribeOrigins: a binary whose record is missing, or about a file of
// another size, has its origin not recorded; files kubeharness does not
// provide are not described.
func TestDescribeOrigins(t *testing.T) {
	dir := t.TempDir()
	if got := DescribeOrigins(dir); got != "" {
		t.Errorf("an empty directory: %q", got)
	}
	for name, content := range map[string]string{"etcd": "etcd", "kube-apiserver": "apiserver", "kubelet": "kubelet", "notes.txt": "notes"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := recordBuilt(filepath.Join(dir, "kubelet"), kubeComponent("kubelet"), v1371, v1371); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteOrigin(filepath.Join(dir, "etcd"), Origin{How: OriginDownloaded, Kubernetes: v1371, Size: 99}); err != nil {
		t.Fatal(err)
	}
	if got, want := DescribeOrigins(dir), "built: kubelet; origin not recorded: etcd, kube-apiserver"; got != want {
		t.Errorf("DescribeOrigins = %q, want %q", got, want)
	}
}

// TestTooSlow: auto mode gives up a download that, a minute in, would need
// more than ten more minutes at the rate it has had.
func TestTooSlow(t *testing.T) {
	const mb = 1_000_000
	for _, tc := range []struct {
		name        string
		done, total int64
		elapsed     time.Duration
		slow        bool
	}{
		{"too early to tell", 1, 70 * mb, 59 * time.Second, false},
		{"fast", 35 * mb, 70 * mb, time.Minute, false},
		{"ten minutes to go", 7 * mb, 77 * mb, time.Minute, false},
		{"eleven minutes to go", 7 * mb, 84 * mb, time.Minute, true},
		{"nothing yet", 0, 70 * mb, time.Minute, true},
		{"size unknown", 1, -1, time.Hour, false},
		{"finished", 70 * mb, 70 * mb, time.Hour, false},
	} {
		if _, slow := tooSlow(tc.done, tc.total, tc.elapsed); slow != tc.slow {
			t.Errorf("%s: tooSlow(%d, %d, %s) = %v, want %v", tc.name, tc.done, tc.total, tc.elapsed, slow, tc.slow)
		}
	}
}

// besideBuilt is what a build of names builds: kube-apiserver-test too,
// beside a kube-apiserver built from source.
func besideBuilt(names []string) []string {
	if !slices.Contains(names, KubeAPIServer.Name) {
		return names
	}
	out := append(slices.Clone(names), KubeAPIServerTest.Name)
	slices.Sort(out)
	return out
}
