package envtestarchive

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/internal/archivetest"
)

// plainIndexRefusal is what the refusal of an index over plain http says.
const plainIndexRefusal = ": the sha512 an archive is checked against comes from the index, so whoever can change the traffic could serve any archive with a matching sha512; use an https:// URL, or set KUBEHARNESS_ENVTEST_INDEX_INSECURE=1 to accept it anyway"

// TestPlainHTTPIndexIsRefused: an index over plain http is refused before
// it is asked anything, saying why and what to do: a strict Source fails,
// another leaves the binaries to the next source, saying why.
func TestPlainHTTPIndexIsRefused(t *testing.T) {
	t.Setenv(IndexInsecureEnv, "")
	archive := archivetest.TarGz(t, archivetest.Binaries())
	for _, strict := range []bool{true, false} {
		t.Run(map[bool]string{true: "strict", false: "not strict"}[strict], func(t *testing.T) {
			srv := archivetest.NewPlainServer(t)
			srv.Publish("1.37.1", archive, archive)
			s, out := testSource(srv)
			s.Strict = strict
			rest, err := s.Provide(context.Background(), v1371, t.TempDir(), wants(component.EnvtestComponents...))
			refusal := "envtest index " + srv.IndexURL() + " is plain http" + plainIndexRefusal
			if strict {
				wantErr(t, err, refusal)
			} else {
				if err != nil {
					t.Fatalf("Provide: %v\n%s", err, out)
				}
				if len(rest) != 3 || rest[1].Why != "download unavailable ("+refusal+")" {
					t.Errorf("left %+v", rest)
				}
			}
			if got := srv.Requests.Load(); got != 0 {
				t.Errorf("%d requests reached the plain http index", got)
			}
		})
	}
}

// TestPlainHTTPIndexWhenInsecure: $KUBEHARNESS_ENVTEST_INDEX_INSECURE=1, or
// Source.InsecureIndex, accepts an index over plain http, and Provide says
// that the sha512 comes from it.
func TestPlainHTTPIndexWhenInsecure(t *testing.T) {
	archive := archivetest.TarGz(t, archivetest.Binaries())
	for name, insecure := range map[string]func(t *testing.T, s *Source){
		"the environment": func(t *testing.T, _ *Source) { t.Setenv(IndexInsecureEnv, "1") },
		"the Source":      func(t *testing.T, s *Source) { t.Setenv(IndexInsecureEnv, ""); s.InsecureIndex = true },
	} {
		t.Run(name, func(t *testing.T) {
			srv := archivetest.NewPlainServer(t)
			srv.Publish("1.37.1", archive, archive)
			s, out := testSource(srv)
			s.Strict = true
			insecure(t, s)
			if _, err := s.Provide(context.Background(), v1371, t.TempDir(), wants(component.EnvtestComponents...)); err != nil {
				t.Fatalf("Provide: %v\n%s", err, out)
			}
			wantLines(t, out.String(),
				"envtest index "+srv.IndexURL()+": plain http, accepted as KUBEHARNESS_ENVTEST_INDEX_INSECURE says: the sha512 archives are checked against comes from it, unprotected on the way\n",
				archiveName(v1371, runtime.GOOS, runtime.GOARCH)+": 0.0 MB in ",
				", sha512 matches the index's (the checksum comes from "+srv.IndexURL()+")\n")
		})
	}
}

// TestIndexRedirectToPlainHTTPIsRefused: an https index that redirects to
// plain http is refused before the plain http URL is asked.
func TestIndexRedirectToPlainHTTPIsRefused(t *testing.T) {
	t.Setenv(IndexInsecureEnv, "")
	archive := archivetest.TarGz(t, archivetest.Binaries())
	plain := archivetest.NewPlainServer(t)
	plain.Publish("1.37.1", archive, archive)
	redirect := httptest.NewTLSServer(http.RedirectHandler(plain.IndexURL(), http.StatusFound))
	t.Cleanup(redirect.Close)
	where := redirect.URL + "/envtest-releases.yaml"
	var out strings.Builder
	s := &Source{Out: &out, Strict: true, Index: where, HTTPClient: redirect.Client()}
	_, err := s.Provide(context.Background(), v1371, t.TempDir(), wants(component.EnvtestComponents...))
	wantErr(t, err, "envtest index "+where+" redirects to "+plain.IndexURL()+", plain http"+plainIndexRefusal)
	if got := plain.Requests.Load(); got != 0 {
		t.Errorf("%d requests reached the plain http index", got)
	}
}
