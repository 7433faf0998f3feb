package binaries

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plainIndexRefusal is what the refusal of an index over plain http says.
const plainIndexRefusal = ": the sha512 an archive is checked against comes from the index, so whoever can change the traffic could serve any archive with a matching sha512; use an https:// URL, or set KUBEHARNESS_ENVTEST_INDEX_INSECURE=1 to accept it anyway"

// TestPlainHTTPIndexIsRefused: an index over plain http is refused before
// it is asked anything, saying why and what to do: download mode fails,
// auto mode builds.
func TestPlainHTTPIndexIsRefused(t *testing.T) {
	t.Setenv(IndexInsecureEnv, "")
	archive := envtestTarGz(t, archivedBinaries())
	for _, mode := range []Mode{ModeDownload, ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			srv := newPlainEnvtestServer(t)
			srv.publish("1.37.1", archive, archive)
			bs := &builds{}
			b, out := downloadBuilder(t, srv, mode, testRoot(t), bs)
			_, err := b.Build(context.Background(), v1371, EnvtestComponents...)
			refusal := "envtest index " + srv.indexURL() + " is plain http" + plainIndexRefusal
			if mode == ModeDownload {
				wantErr(t, err, refusal)
			} else {
				if err != nil {
					t.Fatalf("Build: %v\n%s", err, out)
				}
				wantLines(t, out.String(), "kube-apiserver 1.37.1: download unavailable ("+refusal+"); building from the Go module proxy\n")
				if diff := cmp.Diff(besideBuilt([]string{"etcd", "kube-apiserver", "kubectl"}), bs.list()); diff != "" {
					t.Errorf("built (-want +got):\n%s", diff)
				}
			}
			if got := srv.requests.Load(); got != 0 {
				t.Errorf("%d requests reached the plain http index", got)
			}
		})
	}
}

// TestPlainHTTPIndexWhenInsecure: $KUBEHARNESS_ENVTEST_INDEX_INSECURE=1, or
// Builder.InsecureIndex, accepts an index over plain http, and Build says
// that the sha512 comes from it.
func TestPlainHTTPIndexWhenInsecure(t *testing.T) {
	archive := envtestTarGz(t, archivedBinaries())
	for name, insecure := range map[string]func(t *testing.T, b *Builder){
		"the environment": func(t *testing.T, _ *Builder) { t.Setenv(IndexInsecureEnv, "1") },
		"the Builder":     func(t *testing.T, b *Builder) { t.Setenv(IndexInsecureEnv, ""); b.InsecureIndex = true },
	} {
		t.Run(name, func(t *testing.T) {
			srv := newPlainEnvtestServer(t)
			srv.publish("1.37.1", archive, archive)
			b, out := downloadBuilder(t, srv, ModeDownload, testRoot(t), &builds{})
			insecure(t, b)
			if _, err := b.Build(context.Background(), v1371, EnvtestComponents...); err != nil {
				t.Fatalf("Build: %v\n%s", err, out)
			}
			wantLines(t, out.String(),
				"envtest index "+srv.indexURL()+": plain http, accepted as KUBEHARNESS_ENVTEST_INDEX_INSECURE says: the sha512 archives are checked against comes from it, unprotected on the way\n",
				archiveName(v1371, runtime.GOOS, runtime.GOARCH)+": 0.0 MB in ",
				", sha512 matches the index's (the checksum comes from "+srv.indexURL()+")\n")
		})
	}
}

// TestIndexRedirectToPlainHTTPIsRefused: an https index that redirects to
// plain http is refused before the plain http URL is asked.
func TestIndexRedirectToPlainHTTPIsRefused(t *testing.T) {
	t.Setenv(IndexInsecureEnv, "")
	archive := envtestTarGz(t, archivedBinaries())
	plain := newPlainEnvtestServer(t)
	plain.publish("1.37.1", archive, archive)
	redirect := httptest.NewTLSServer(http.RedirectHandler(plain.indexURL(), http.StatusFound))
	t.Cleanup(redirect.Close)
	where := redirect.URL + "/envtest-releases.yaml"
	var out strings.Builder
	b := &Builder{Root: testRoot(t), Store: t.TempDir(), Out: &out, Binaries: ModeDownload, Index: where, HTTPClient: redirect.Client()}
	_, err := b.Build(context.Background(), v1371, EnvtestComponents...)
	wantErr(t, err, "envtest index "+where+" redirects to "+plain.indexURL()+", plain http"+plainIndexRefusal)
	if got := plain.requests.Load(); got != 0 {
		t.Errorf("%d requests reached the plain http index", got)
	}
}
