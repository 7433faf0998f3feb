package envtestarchive

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/internal/archivetest"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// v1371 is the Kubernetes version the tests provide.
var v1371 = versions.MustParse("1.37.1")

// testSource reads srv's index, trusting srv, and writes progress to out.
func testSource(srv *archivetest.Server) (*Source, *strings.Builder) {
	out := &strings.Builder{}
	return &Source{Index: srv.IndexURL(), HTTPClient: srv.Client(), Out: out}, out
}

// wants are components wanted at Kubernetes 1.37.1 (etcd at any version).
func wants(cs ...component.Component) []component.Want {
	var ws []component.Want
	for _, c := range cs {
		w := component.Want{Component: c, Version: v1371}
		if c.IsEtcd() {
			w.Version = versions.Version{}
		}
		ws = append(ws, w)
	}
	return ws
}

// dirFiles lists dir's entries.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
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

// TestProvide: what the archive holds is downloaded once and extracted,
// nothing else of it, each with its origin; what it lacks is left with
// why; a binary it provided is one it keeps, until it is replaced.
func TestProvide(t *testing.T) {
	srv := archivetest.NewServer(t)
	archive := archivetest.TarGz(t, archivetest.Binaries())
	srv.Publish("1.37.1", archive, archive)
	s, out := testSource(srv)
	dir := t.TempDir()
	ctx := context.Background()
	rest, err := s.Provide(ctx, v1371, dir, wants(component.Etcd, component.KubeAPIServer, component.Kubectl, component.KubeControllerManager))
	if err != nil {
		t.Fatalf("Provide: %v\n%s", err, out)
	}
	if len(rest) != 1 || rest[0].Name != "kube-controller-manager" || rest[0].Why != "not in the envtest archive" {
		t.Errorf("left %+v", rest)
	}
	if got := srv.ArchiveGets.Load(); got != 1 {
		t.Errorf("the archive was fetched %d times, want once", got)
	}
	name := archivetest.Name(v1371)
	for bin, content := range archivetest.Binaries() {
		o, ok := store.ReadOrigin(dir, bin)
		want := store.Origin{How: store.OriginDownloaded, Kubernetes: v1371, Source: srv.URL + "/" + name, Index: srv.IndexURL(), ArchiveSHA512: archivetest.SHA512Hex(archive),
			Size: int64(len(content)), SHA512: archivetest.SHA512Hex([]byte(content))}
		if diff := cmp.Diff(want, o); !ok || diff != "" {
			t.Errorf("origin of %s (recorded %v) (-want +got):\n%s", bin, ok, diff)
		}
		if got, ok := s.Keeps(ctx, v1371, component.Component{Name: bin, Module: moduleOf(bin), VersionFlag: "--version"}, filepath.Join(dir, bin)); !ok || got == "" {
			t.Errorf("the Source does not keep the %s it provided", bin)
		}
	}
	if files := dirFiles(t, dir); !slices.Equal(files, []string{".etcd.origin", ".kube-apiserver.origin", ".kubectl.origin", "etcd", "kube-apiserver", "kubectl"}) {
		t.Errorf("the store directory holds %v: the archive, its NOTICE or a temporary file left", files)
	}
	wantLines(t, out.String(), "etcd 3.6.4: downloaded from "+name+", sha512 verified -> "+filepath.Join(dir, "etcd")+"\n")
	if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte(strings.Replace(archivetest.Etcd, "0123abc", "3210abc", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Keeps(ctx, v1371, component.Etcd, filepath.Join(dir, "etcd")); ok {
		t.Error("the Source keeps an etcd that is no longer the one it downloaded")
	}
}

// moduleOf is the module of a component the archive holds.
func moduleOf(name string) string {
	if name == "etcd" {
		return component.Etcd.Module
	}
	return component.KubeAPIServer.Module
}

// TestEtcdPinnedOtherwise: an etcd downloaded where a lockfile pins another
// one for builds says so.
func TestEtcdPinnedOtherwise(t *testing.T) {
	srv := archivetest.NewServer(t)
	archive := archivetest.TarGz(t, archivetest.Binaries())
	srv.Publish("1.37.1", archive, archive)
	s, out := testSource(srv)
	dir := t.TempDir()
	w := component.Want{Component: component.Etcd, Version: versions.MustParse("3.7.3")}
	if _, err := s.Provide(context.Background(), v1371, dir, []component.Want{w}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), "etcd 3.6.4: downloaded from "+archivetest.Name(v1371)+", sha512 verified -> "+filepath.Join(dir, "etcd")+
		" (versions.yaml pins etcd 3.7.3 for builds of Kubernetes 1.37.1; a build provides that one)\n")
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
