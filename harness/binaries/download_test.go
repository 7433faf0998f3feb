package binaries

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubeharness/kubeharness/harness/binaries/envtestarchive"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/internal/archivetest"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// v1371 is the Kubernetes version the tests provide.
var v1371 = versions.MustParse("1.37.1")

// builds is a Source standing in for the Go module build: it writes a
// script reporting the version wanted as the component does, with an empty
// git commit as the Go module proxy gives it, records its origin, says so
// as the build does, and records that it built it.
type builds struct {
	mu    sync.Mutex
	names []string
	out   io.Writer
}

// list is what was built, sorted.
func (bs *builds) list() []string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	names := slices.Clone(bs.names)
	slices.Sort(names)
	return names
}

// builtMarker is in every binary the stand-in build writes.
const builtMarker = "# built by the test's build step"

// Name implements Source.
func (bs *builds) Name() string { return "the test's build" }

// Provide implements Source.
func (bs *builds) Provide(_ context.Context, kube versions.Version, dir string, wants []Want) ([]Want, error) {
	for _, w := range wants {
		if w.Version.IsZero() {
			return nil, fmt.Errorf("%s: the test's build takes no etcd that no versions.yaml pins", w.Name)
		}
		why := ""
		if w.Why != "" {
			why = w.Why + "; "
		}
		if bs.out != nil {
			fmt.Fprintf(bs.out, "%s %s: %sbuilding from the Go module proxy\n", w.Name, w.Version, why)
		}
		bs.mu.Lock()
		bs.names = append(bs.names, w.Name)
		bs.mu.Unlock()
		report := "Kubernetes v" + w.Version.String() + "\nGitCommit:\"\""
		if w.IsEtcd() {
			report = "etcd Version: " + w.Version.String()
		}
		bin := filepath.Join(dir, w.Name)
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+builtMarker+"\nprintf '%s\\n' '"+report+"'\n"), 0o755); err != nil {
			return nil, err
		}
		if err := store.Record(bin, Origin{How: OriginBuilt, Kubernetes: kube, Source: w.Module + "@v" + w.Version.String()}); err != nil {
			return nil, err
		}
	}
	return nil, nil
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

// downloadBuilder is a Store in mode whose envtest archive reads srv's
// index and whose build is bs, in a new bin-dir; root is its project root
// ("" for none).
func downloadBuilder(t *testing.T, srv *archivetest.Server, mode Mode, root string, bs *builds) (*Store, *strings.Builder) {
	t.Helper()
	out := &strings.Builder{}
	bs.out = out
	return &Store{
		Root: root, Dir: t.TempDir(), Out: out, Mode: mode,
		archive: &envtestarchive.Source{Index: srv.IndexURL(), HTTPClient: srv.Client(), Out: out}, build: bs,
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
func buildAgainOffline(ctx context.Context, t *testing.T, srv *archivetest.Server, b *Store, out *strings.Builder, components ...Component) {
	t.Helper()
	requests := srv.Requests.Load()
	out.Reset()
	if _, err := b.Provide(ctx, v1371, components...); err != nil {
		t.Fatalf("second Build: %v\n%s", err, out)
	}
	if got := srv.Requests.Load(); got != requests {
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
	srv := archivetest.NewServer(t)
	archive := archivetest.TarGz(t, archivetest.Binaries())
	srv.Publish("1.36.4", archive, archive)
	srv.Publish("1.37.1", archive, archive)
	t.Setenv("PATH", "") // no go command: nothing may reach the Go module proxy
	bs := &builds{}
	b, out := downloadBuilder(t, srv, ModeAuto, "", bs)
	ctx := context.Background()
	components := []Component{Etcd, KubeAPIServer, Kubectl, KubeControllerManager}
	dir, err := b.Provide(ctx, v1371, components...)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out)
	}
	if diff := cmp.Diff([]string{"kube-controller-manager"}, bs.list()); diff != "" {
		t.Errorf("built (-want +got):\n%s", diff)
	}
	wantLines(t, out.String(), "kube-apiserver-test 1.37.1: not built beside a downloaded kube-apiserver")
	name := archivetest.Name(v1371)
	for bin, content := range archivetest.Binaries() {
		if got := readFile(t, filepath.Join(dir, bin)); got != content {
			t.Errorf("%s is %q, not the archive's", bin, got)
		}
		o, ok := ReadOrigin(dir, bin)
		want := Origin{How: OriginDownloaded, Kubernetes: v1371, Source: srv.URL + "/" + name, Index: srv.IndexURL(), ArchiveSHA512: archivetest.SHA512Hex(archive),
			Size: int64(len(content)), SHA512: archivetest.SHA512Hex([]byte(content))}
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
	if got := srv.ArchiveGets.Load(); got != 1 {
		t.Errorf("the archive was fetched %d times, want once", got)
	}
	if got, want := DescribeOrigins(dir), "downloaded: etcd, kube-apiserver, kubectl; built: kube-controller-manager"; got != want {
		t.Errorf("DescribeOrigins = %q, want %q", got, want)
	}
	wantLines(t, out.String(),
		name+": downloading 0.0 MB from "+srv.URL+"/"+name,
		name+": 0.0 MB in ",
		", sha512 matches the index's (the checksum comes from "+srv.IndexURL()+")\n",
		"etcd 3.6.4: downloaded from "+name+", sha512 verified -> "+filepath.Join(dir, "etcd")+"\n",
		"kube-apiserver 1.37.1: downloaded from "+name+", sha512 verified -> "+filepath.Join(dir, "kube-apiserver")+"\n",
		"kubectl 1.37.1: downloaded from "+name,
		"kube-controller-manager 1.37.1: not in the envtest archive; building from the Go module proxy\n")

	buildAgainOffline(ctx, t, srv, b, out, components...)
	if len(bs.list()) != 1 {
		t.Errorf("a second Build built %v", bs.list()[1:])
	}
	wantLines(t, out.String(), "etcd 3.6.4: kept in", "kube-apiserver 1.37.1: up to date", "kubectl 1.37.1: up to date", "kube-controller-manager 1.37.1: up to date")

	requests := srv.Requests.Load()
	other, otherOut := downloadBuilder(t, srv, ModeAuto, "", bs)
	other.Reuse = b.Dir
	otherDir, err := other.Provide(ctx, v1371, components...)
	if err != nil {
		t.Fatalf("Build reusing the store: %v\n%s", err, otherOut)
	}
	if got := srv.Requests.Load(); got != requests {
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
	good := archivetest.TarGz(t, archivetest.Binaries())
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 0xff
	withoutKubectl := archivetest.TarGz(t, map[string]string{"etcd": archivetest.Etcd, "kube-apiserver": archivetest.APIServer})
	olderAPIServer := archivetest.TarGz(t, map[string]string{"etcd": archivetest.Etcd, "kube-apiserver": strings.ReplaceAll(archivetest.APIServer, "1.37.1", "1.36.4"), "kubectl": archivetest.Kubectl})
	all := []string{"etcd", "kube-apiserver", "kubectl"}
	cases := []struct {
		name       string
		serve      func(s *archivetest.Server)
		closed     bool
		built      []string
		why        string
		downloaded []string
	}{
		{
			name:  "the index lacks the version",
			serve: func(s *archivetest.Server) { s.Publish("1.36.4", good, good) },
			built: all,
			why:   "has no archive for Kubernetes 1.37.1 on " + runtime.GOOS + "/" + runtime.GOARCH + " (newest there: 1.36.4)",
		},
		{
			name:  "the archive does not match its sha512",
			serve: func(s *archivetest.Server) { s.Publish("1.37.1", good, corrupt) },
			built: all,
			why:   "does not match the index: it is " + archivetest.SHA512Hex(corrupt)[:16] + "…, the index says " + archivetest.SHA512Hex(good)[:16] + "…; nothing from it is installed",
		},
		{
			name:   "the index cannot be reached",
			closed: true,
			built:  all,
			why:    "/envtest-releases.yaml: dial tcp ",
		},
		{
			name: "the archive is missing",
			serve: func(s *archivetest.Server) {
				s.IndexLine("  v1.37.1:\n    " + archivetest.Name(v1371) + ":\n      hash: " + archivetest.SHA512Hex(good) + "\n      selfLink: gone.tar.gz\n")
			},
			built: all,
			why:   "/gone.tar.gz: 404 Not Found",
		},
		{
			name:       "the archive lacks a binary",
			serve:      func(s *archivetest.Server) { s.Publish("1.37.1", withoutKubectl, withoutKubectl) },
			built:      []string{"kubectl"},
			why:        "kubectl 1.37.1: download unavailable (" + archivetest.Name(v1371) + ": holds no controller-tools/envtest/kubectl); building from the Go module proxy\n",
			downloaded: []string{"etcd", "kube-apiserver"},
		},
		{
			name:       "a binary reports another version",
			serve:      func(s *archivetest.Server) { s.Publish("1.37.1", olderAPIServer, olderAPIServer) },
			built:      []string{"kube-apiserver"},
			why:        "the kube-apiserver in " + archivetest.Name(v1371) + " is not usable: it reports Kubernetes 1.36.4",
			downloaded: []string{"etcd", "kubectl"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := archivetest.NewServer(t)
			if tc.serve != nil {
				tc.serve(srv)
			}
			if tc.closed {
				srv.Close()
			}
			bs := &builds{}
			b, out := downloadBuilder(t, srv, ModeAuto, testRoot(t), bs)
			dir, err := b.Provide(context.Background(), v1371, EnvtestComponents...)
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
	good := archivetest.TarGz(t, archivetest.Binaries())
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
			srv := archivetest.NewServer(t)
			srv.Publish(tc.version, tc.indexed, tc.served)
			bs := &builds{}
			b, out := downloadBuilder(t, srv, ModeDownload, testRoot(t), bs)
			_, err := b.Provide(context.Background(), v1371, EnvtestComponents...)
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
			if files := storeFiles(t, StoreDir(b.Dir, v1371)); len(files) > 0 {
				t.Errorf("the store directory holds %v", files)
			}
		})
	}
}

// TestBuildModeContactsNothing: build mode builds every binary, says it
// builds because the mode says so, and never asks the index's server.
func TestBuildModeContactsNothing(t *testing.T) {
	srv := archivetest.NewServer(t)
	archive := archivetest.TarGz(t, archivetest.Binaries())
	srv.Publish("1.37.1", archive, archive)
	bs := &builds{}
	b, out := downloadBuilder(t, srv, ModeBuild, testRoot(t), bs)
	if _, err := b.Provide(context.Background(), v1371, EnvtestComponents...); err != nil {
		t.Fatalf("Build: %v\n%s", err, out)
	}
	if got := srv.Requests.Load(); got != 0 {
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
	srv := archivetest.NewServer(t)
	archive := archivetest.TarGz(t, archivetest.Binaries())
	srv.Publish("1.37.1", archive, archive)
	bs := &builds{}
	b, out := downloadBuilder(t, srv, ModeAuto, testRoot(t), bs)
	ctx := context.Background()
	dir, err := b.Provide(ctx, v1371, EnvtestComponents...)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out)
	}
	wantLines(t, out.String(), "etcd 3.6.4: downloaded from "+archivetest.Name(v1371)+", sha512 verified -> "+filepath.Join(dir, "etcd")+
		" (versions.yaml pins etcd 3.7.3 for builds of Kubernetes 1.37.1; a build provides that one)\n")

	buildAgainOffline(ctx, t, srv, b, out, EnvtestComponents...)
	wantLines(t, out.String(), "etcd 3.6.4: up to date in "+dir+" (downloaded with Kubernetes 1.37.1)\n")

	// The same size, other bytes: the record no longer describes the file.
	etcd := filepath.Join(dir, "etcd")
	if err := os.WriteFile(etcd, []byte(strings.Replace(archivetest.Etcd, "0123abc", "3210abc", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := b.Provide(ctx, v1371, EnvtestComponents...); err != nil {
		t.Fatalf("third Build: %v\n%s", err, out)
	}
	if got := srv.ArchiveGets.Load(); got != 2 {
		t.Errorf("the archive was fetched %d times, want again for the etcd replaced", got)
	}
	if got := readFile(t, etcd); got != archivetest.Etcd {
		t.Errorf("etcd is %q, not the archive's again", got)
	}

	requests := srv.Requests.Load()
	out.Reset()
	b.Mode = ModeBuild
	if _, err := b.Provide(ctx, v1371, EnvtestComponents...); err != nil {
		t.Fatalf("Build in build mode: %v\n%s", err, out)
	}
	if diff := cmp.Diff([]string{"etcd"}, bs.list()); diff != "" {
		t.Errorf("build mode built (-want +got):\n%s", diff)
	}
	if got := srv.Requests.Load(); got != requests {
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
	srv := archivetest.NewServer(t)
	bs := &builds{}
	b, _ := downloadBuilder(t, srv, "", testRoot(t), bs)
	t.Setenv(ModeEnv, "offline")
	_, err := b.Provide(context.Background(), v1371, EnvtestComponents...)
	want := `$KUBEHARNESS_BINARIES: unknown mode "offline": want auto (download, else build from the Go module proxy), download or build`
	if err == nil || err.Error() != want {
		t.Errorf("Build with %s=offline: %v; want %q", ModeEnv, err, want)
	}
	if srv.Requests.Load() != 0 || len(bs.list()) != 0 {
		t.Errorf("Build with a bad mode made %d requests and built %v", srv.Requests.Load(), bs.list())
	}
	t.Setenv(ModeEnv, "build")
	if _, m, err := b.sources(); err != nil || m != ModeBuild {
		t.Errorf("with %s=build the Builder's mode is %q, %v", ModeEnv, m, err)
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
	if err := store.Record(filepath.Join(dir, "kubelet"), Origin{How: OriginBuilt, Kubernetes: v1371}); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteOrigin(filepath.Join(dir, "etcd"), Origin{How: OriginDownloaded, Kubernetes: v1371, Size: 99}); err != nil {
		t.Fatal(err)
	}
	if got, want := DescribeOrigins(dir), "built: kubelet; origin not recorded: etcd, kube-apiserver"; got != want {
		t.Errorf("DescribeOrigins = %q, want %q", got, want)
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
