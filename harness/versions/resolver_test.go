package versions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeProxy answers like the Go module proxy of this workplace: it lists
// k8s.io/kubernetes patches it may refuse to serve.
type fakeProxy struct {
	listed      []string
	refused     map[string]error
	unreachable error

	mu    sync.Mutex
	calls []string
}

func (p *fakeProxy) Lists(_ context.Context, v Version) (bool, error) {
	p.record("lists " + v.String())
	if p.unreachable != nil {
		return false, p.unreachable
	}
	return slices.Contains(p.listed, v.String()), nil
}

func (p *fakeProxy) Serves(_ context.Context, v Version) error {
	p.record("serves " + v.String())
	if p.unreachable != nil {
		return p.unreachable
	}
	if !slices.Contains(p.listed, v.String()) {
		return fmt.Errorf("k8s.io/kubernetes has no version v%s", v)
	}
	return p.refused[v.String()]
}

func (p *fakeProxy) record(call string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
}

// testLock is versions.yaml as committed, in the order it lists them.
func testLock() *Lockfile {
	return &Lockfile{Default: MustParse("1.37.1"), Versions: []Entry{
		{Kubernetes: MustParse("1.37.1"), Etcd: MustParse("3.7.3")},
		{Kubernetes: MustParse("1.36.4"), Etcd: MustParse("3.6.16")},
		{Kubernetes: MustParse("1.35.4"), Etcd: MustParse("3.6.16")},
		{Kubernetes: MustParse("1.37.0"), Etcd: MustParse("3.7.0")},
	}}
}

// workplaceProxy lists 1.37.2 but refuses its zip, serves 1.36.3 without one
// of its staging modules, and serves 1.36.5 and 1.34.0-1.34.4 completely.
func workplaceProxy() *fakeProxy {
	return &fakeProxy{
		listed: []string{"1.34.0", "1.34.1", "1.34.2", "1.34.3", "1.34.4",
			"1.35.0", "1.35.1", "1.35.2", "1.35.3", "1.35.4",
			"1.36.0", "1.36.1", "1.36.2", "1.36.3", "1.36.4", "1.36.5",
			"1.37.0", "1.37.1", "1.37.2"},
		refused: map[string]error{
			"1.37.2": errors.New("the Go module proxy lists k8s.io/kubernetes@v1.37.2 but refuses to serve it (403 Forbidden)"),
			"1.36.3": errors.New("Kubernetes 1.36.3 needs k8s.io/sample-cli-plugin@v0.36.3: no such version"),
		},
	}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name  string
		value string
		from  Source
		// want is the version; otherwise wantErr are parts of the error:
		// ParseSelector's, with Lockfile.Explain's hint, or Resolve's.
		want    string
		wantErr []string
		// notErr must not appear in the error.
		notErr []string
		// wantNote is part of what Resolve writes to Out.
		wantNote string
		// noProxy: the answer needs no proxy.
		noProxy bool
	}{
		{name: "nothing asked: versions.yaml's default", from: SourceEnv, want: "1.37.1", noProxy: true},
		{name: "locked patch", value: "1.36.4", from: SourceEnv, want: "1.36.4", noProxy: true},
		{name: "locked patch with v", value: "v1.37.1", from: SourceEnv, want: "1.37.1", noProxy: true},
		{name: "spaces around", value: " 1.37.1 ", from: SourceEnv, want: "1.37.1", noProxy: true},
		{name: "minor skips a refused patch", value: "1.37", from: SourceEnv, want: "1.37.1",
			wantNote: "skipping Kubernetes 1.37.2: the Go module proxy lists k8s.io/kubernetes@v1.37.2 but refuses to serve it"},
		{name: "minor with .x", value: "1.37.x", from: SourceEnv, want: "1.37.1"},
		{name: "minor with v", value: "v1.37", from: SourceFlag, want: "1.37.1", wantNote: "--version=v1.37 resolves to 1.37.1"},
		{name: "minor newer than versions.yaml", value: "1.36", from: SourceEnv, want: "1.36.5",
			wantNote: "K8S_VERSION=1.36 resolves to 1.36.5"},
		{name: "minor versions.yaml does not pin", value: "1.34", from: SourceEnv, want: "1.34.4"},
		{name: "served patch versions.yaml does not pin", value: "1.34.2", from: SourceEnv, want: "1.34.2"},
		{
			name: "unknown minor", value: "9.99", from: SourceEnv,
			wantErr: []string{"K8S_VERSION=9.99: the Go module proxy serves no release of Kubernetes 9.99",
				"Versions that can be built: 1.37.1, 1.37.0, 1.36.5, 1.36.4, 1.35.4 (", "e.g. K8S_VERSION=1.37.1", "K8S_VERSION=1.37"},
			notErr: []string{"1.36.3", "1.37.2"},
		},
		{
			name: "listed patch that cannot be built", value: "1.36.3", from: SourceEnv,
			wantErr: []string{"K8S_VERSION=1.36.3: Kubernetes 1.36.3 cannot be built", "k8s.io/sample-cli-plugin@v0.36.3", "Versions that can be built: 1.37.1"},
		},
		{
			name: "refused patch", value: "1.37.2", from: SourceArg,
			wantErr: []string{"VERSION argument 1.37.2: Kubernetes 1.37.2 cannot be built", "refuses to serve it", "e.g. the VERSION argument 1.37.1"},
		},
		{
			name: "patch the proxy does not have", value: "1.37.9", from: SourceFlag,
			wantErr: []string{"--version=1.37.9: the Go module proxy has no Kubernetes 1.37.9", "e.g. --version=1.37.1"},
		},
		{
			name: "pre-release is not a minor", value: "v1.37.1-rc.0", from: SourceEnv, noProxy: true,
			wantErr: []string{"K8S_VERSION=v1.37.1-rc.0 is a pre-release", "ask for K8S_VERSION=1.37.1, or K8S_VERSION=1.37"},
		},
		{
			name: "build metadata", value: "1.37.1+abc", from: SourceEnv, noProxy: true,
			wantErr: []string{"is a pre-release", "K8S_VERSION=1.37.1,"},
		},
		{
			name: "not a version", value: "latest", from: SourceEnv, noProxy: true,
			wantErr: []string{"K8S_VERSION=latest is not a Kubernetes version", "Versions that can be built: 1.37.1, 1.37.0, 1.36.4, 1.35.4"},
		},
		{
			name: "four parts", value: "1.37.1.2", from: SourceEnv, noProxy: true,
			wantErr: []string{"K8S_VERSION=1.37.1.2 is not a Kubernetes version"},
		},
		{
			name: "leading zero", value: "1.037", from: SourceEnv, noProxy: true,
			wantErr: []string{"K8S_VERSION=1.037 is not a Kubernetes version"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy := workplaceProxy()
			var notes bytes.Buffer
			r := &Resolver{Lock: testLock(), Proxy: proxy, Out: &notes}
			var got Version
			sel, err := ParseSelector(tc.value, tc.from)
			if err != nil {
				err = r.Lock.Explain(err)
			} else {
				got, err = r.Resolve(context.Background(), sel)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Resolve(%s) = %s, want an error", sel, got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q:\n%v", want, err)
					}
				}
				for _, not := range tc.notErr {
					if strings.Contains(err.Error(), not) {
						t.Errorf("error names %q, which cannot be built:\n%v", not, err)
					}
				}
			} else if err != nil || got.String() != tc.want {
				t.Fatalf("Resolve(%s) = %q, %v; want %q", sel, got, err, tc.want)
			}
			if tc.wantNote != "" && !strings.Contains(notes.String(), tc.wantNote) {
				t.Errorf("notes lack %q:\n%s", tc.wantNote, notes.String())
			}
			if tc.noProxy && len(proxy.calls) > 0 {
				t.Errorf("asked the proxy %v; the answer needs no proxy", proxy.calls)
			}
		})
	}
}

func TestResolveOffline(t *testing.T) {
	proxy := &fakeProxy{unreachable: errors.New("dial tcp: lookup proxy.golang.org: no such host")}
	var notes bytes.Buffer
	r := &Resolver{Lock: testLock(), Proxy: proxy, Out: &notes}
	got, err := r.Resolve(context.Background(), MustParseSelector("1.36", SourceEnv))
	if err != nil || got.String() != "1.36.4" {
		t.Fatalf("offline, a minor versions.yaml pins falls back to its patch: got %q, %v", got, err)
	}
	if !strings.Contains(notes.String(), "cannot ask the Go module proxy whether Kubernetes 1.36.5 exists (dial tcp: lookup proxy.golang.org: no such host): looking no further than 1.36.4") {
		t.Errorf("the fallback must be noted; notes:\n%s", notes.String())
	}
	_, err = r.Resolve(context.Background(), MustParseSelector("1.34", SourceEnv))
	for _, want := range []string{"K8S_VERSION=1.34: cannot ask the Go module proxy", "no such host", "Versions that can be built: 1.37.1, 1.37.0, 1.36.4, 1.35.4"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestBuildable(t *testing.T) {
	r := &Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	got := r.Buildable(context.Background())
	want := []Version{MustParse("1.37.1"), MustParse("1.37.0"), MustParse("1.36.5"), MustParse("1.36.4"), MustParse("1.35.4")}
	if !slices.Equal(got, want) {
		t.Errorf("Buildable = %v, want %v", got, want)
	}
}

// TestBuildableOf: a minor a user asks for adds its newest patch the proxy
// serves; a request for nothing adds nothing.
func TestBuildableOf(t *testing.T) {
	r := &Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	got := r.BuildableOf(context.Background(), MustParseSelector("1.34.1", SourceArg), Selector{})
	want := []Version{MustParse("1.37.1"), MustParse("1.37.0"), MustParse("1.36.5"), MustParse("1.36.4"), MustParse("1.35.4"), MustParse("1.34.4")}
	if !slices.Equal(got, want) {
		t.Errorf("BuildableOf(1.34.1) = %v, want %v", got, want)
	}
}
