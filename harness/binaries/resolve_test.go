package binaries

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

func (p *fakeProxy) Lists(_ context.Context, v string) (bool, error) {
	p.record("lists " + v)
	if p.unreachable != nil {
		return false, p.unreachable
	}
	return slices.Contains(p.listed, v), nil
}

func (p *fakeProxy) Serves(_ context.Context, v string) error {
	p.record("serves " + v)
	if p.unreachable != nil {
		return p.unreachable
	}
	if !slices.Contains(p.listed, v) {
		return fmt.Errorf("k8s.io/kubernetes has no version v%s", v)
	}
	return p.refused[v]
}

func (p *fakeProxy) record(call string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
}

// testLock is versions.yaml as committed, in the order it lists them.
func testLock() *Lockfile {
	return &Lockfile{Default: "1.37.1", Versions: []Entry{
		{Kubernetes: "1.37.1", Etcd: "3.7.3"},
		{Kubernetes: "1.36.4", Etcd: "3.6.16"},
		{Kubernetes: "1.35.4", Etcd: "3.6.16"},
		{Kubernetes: "1.37.0", Etcd: "3.7.0"},
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
		name string
		req  Request
		// want is the version; otherwise wantErr are parts of the error.
		want    string
		wantErr []string
		// notErr must not appear in the error.
		notErr []string
		// wantNote is part of what Resolve writes to Out.
		wantNote string
		// noProxy: the answer needs no proxy.
		noProxy bool
	}{
		{name: "nothing asked: versions.yaml's default", req: Request{Source: VersionEnv}, want: "1.37.1", noProxy: true},
		{name: "locked patch", req: Request{Value: "1.36.4", Source: VersionEnv}, want: "1.36.4", noProxy: true},
		{name: "locked patch with v", req: Request{Value: "v1.37.1", Source: VersionEnv}, want: "1.37.1", noProxy: true},
		{name: "spaces around", req: Request{Value: " 1.37.1 ", Source: VersionEnv}, want: "1.37.1", noProxy: true},
		{name: "minor skips a refused patch", req: Request{Value: "1.37", Source: VersionEnv}, want: "1.37.1",
			wantNote: "skipping Kubernetes 1.37.2: the Go module proxy lists k8s.io/kubernetes@v1.37.2 but refuses to serve it"},
		{name: "minor with .x", req: Request{Value: "1.37.x", Source: VersionEnv}, want: "1.37.1"},
		{name: "minor with v", req: Request{Value: "v1.37", Source: SourceFlag}, want: "1.37.1", wantNote: "--version=v1.37 resolves to 1.37.1"},
		{name: "minor newer than versions.yaml", req: Request{Value: "1.36", Source: VersionEnv}, want: "1.36.5",
			wantNote: "K8S_VERSION=1.36 resolves to 1.36.5"},
		{name: "minor versions.yaml does not pin", req: Request{Value: "1.34", Source: VersionEnv}, want: "1.34.4"},
		{name: "served patch versions.yaml does not pin", req: Request{Value: "1.34.2", Source: VersionEnv}, want: "1.34.2"},
		{
			name: "unknown minor", req: Request{Value: "9.99", Source: VersionEnv},
			wantErr: []string{"K8S_VERSION=9.99: the Go module proxy serves no release of Kubernetes 9.99",
				"Versions that can be built: 1.37.1, 1.37.0, 1.36.5, 1.36.4, 1.35.4 (", "e.g. K8S_VERSION=1.37.1", "K8S_VERSION=1.37"},
			notErr: []string{"1.36.3", "1.37.2"},
		},
		{
			name: "listed patch that cannot be built", req: Request{Value: "1.36.3", Source: VersionEnv},
			wantErr: []string{"K8S_VERSION=1.36.3: Kubernetes 1.36.3 cannot be built", "k8s.io/sample-cli-plugin@v0.36.3", "Versions that can be built: 1.37.1"},
		},
		{
			name: "refused patch", req: Request{Value: "1.37.2", Source: SourceArg},
			wantErr: []string{"VERSION argument 1.37.2: Kubernetes 1.37.2 cannot be built", "refuses to serve it", "e.g. the VERSION argument 1.37.1"},
		},
		{
			name: "patch the proxy does not have", req: Request{Value: "1.37.9", Source: SourceFlag},
			wantErr: []string{"--version=1.37.9: the Go module proxy has no Kubernetes 1.37.9", "e.g. --version=1.37.1"},
		},
		{
			name: "pre-release is not a minor", req: Request{Value: "v1.37.1-rc.0", Source: VersionEnv}, noProxy: true,
			wantErr: []string{"K8S_VERSION=v1.37.1-rc.0 is a pre-release", "ask for K8S_VERSION=1.37.1, or K8S_VERSION=1.37"},
		},
		{
			name: "build metadata", req: Request{Value: "1.37.1+abc", Source: VersionEnv}, noProxy: true,
			wantErr: []string{"is a pre-release", "K8S_VERSION=1.37.1,"},
		},
		{
			name: "not a version", req: Request{Value: "latest", Source: VersionEnv}, noProxy: true,
			wantErr: []string{"K8S_VERSION=latest is not a Kubernetes version", "Versions that can be built: 1.37.1, 1.37.0, 1.36.4, 1.35.4"},
		},
		{
			name: "four parts", req: Request{Value: "1.37.1.2", Source: VersionEnv}, noProxy: true,
			wantErr: []string{"K8S_VERSION=1.37.1.2 is not a Kubernetes version"},
		},
		{
			name: "leading zero", req: Request{Value: "1.037", Source: VersionEnv}, noProxy: true,
			wantErr: []string{"K8S_VERSION=1.037 is not a Kubernetes version"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy := workplaceProxy()
			var notes bytes.Buffer
			r := &Resolver{Lock: testLock(), Proxy: proxy, Out: &notes}
			got, err := r.Resolve(context.Background(), tc.req)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Resolve(%s) = %s, want an error", tc.req, got)
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
			} else if err != nil || got != tc.want {
				t.Fatalf("Resolve(%s) = %q, %v; want %q", tc.req, got, err, tc.want)
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

// TestResolveDefaultIsChecked: versions.yaml's default goes through the same
// checks, and its error says where it came from.
func TestResolveDefaultIsChecked(t *testing.T) {
	lock := testLock()
	lock.Default = "1.37.1-rc.0"
	r := &Resolver{Lock: lock, Proxy: workplaceProxy()}
	_, err := r.Resolve(context.Background(), Request{Source: VersionEnv})
	if err == nil || !strings.Contains(err.Error(), "versions.yaml default 1.37.1-rc.0 is a pre-release") {
		t.Fatalf("error %v, want one naming versions.yaml's default", err)
	}
}

func TestResolveOffline(t *testing.T) {
	proxy := &fakeProxy{unreachable: errors.New("dial tcp: lookup proxy.golang.org: no such host")}
	var notes bytes.Buffer
	r := &Resolver{Lock: testLock(), Proxy: proxy, Out: &notes}
	got, err := r.Resolve(context.Background(), Request{Value: "1.36", Source: VersionEnv})
	if err != nil || got != "1.36.4" {
		t.Fatalf("offline, a minor versions.yaml pins falls back to its patch: got %q, %v", got, err)
	}
	if !strings.Contains(notes.String(), "cannot ask the Go module proxy whether Kubernetes 1.36.5 exists (dial tcp: lookup proxy.golang.org: no such host): looking no further than 1.36.4") {
		t.Errorf("the fallback must be noted; notes:\n%s", notes.String())
	}
	_, err = r.Resolve(context.Background(), Request{Value: "1.34", Source: VersionEnv})
	for _, want := range []string{"K8S_VERSION=1.34: cannot ask the Go module proxy", "no such host", "Versions that can be built: 1.37.1, 1.37.0, 1.36.4, 1.35.4"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestBuildable(t *testing.T) {
	r := &Resolver{Lock: testLock(), Proxy: workplaceProxy()}
	got := r.Buildable(context.Background())
	want := []string{"1.37.1", "1.37.0", "1.36.5", "1.36.4", "1.35.4"}
	if !slices.Equal(got, want) {
		t.Errorf("Buildable = %v, want %v", got, want)
	}
}

func TestRequestFrom(t *testing.T) {
	cases := []struct {
		name, env, flag, arg string
		want                 Request
		wantErr              string
	}{
		{name: "nothing", want: Request{Source: VersionEnv}},
		{name: "environment", env: "1.36", want: Request{Value: "1.36", Source: VersionEnv}},
		{name: "flag over environment", env: "1.36", flag: "1.37", want: Request{Value: "1.37", Source: SourceFlag}},
		{name: "argument", env: "1.36", arg: "1.37", want: Request{Value: "1.37", Source: SourceArg}},
		{name: "flag and argument agree", flag: "v1.37", arg: "1.37.x", want: Request{Value: "1.37.x", Source: SourceArg}},
		{name: "flag and argument disagree", flag: "1.36", arg: "1.37", wantErr: "the VERSION argument 1.37 and --version 1.36 disagree"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(VersionEnv, tc.env)
			got, err := RequestFrom(tc.flag, tc.arg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("RequestFrom(%q, %q) = %+v, %v; want %+v", tc.flag, tc.arg, got, err, tc.want)
			}
		})
	}
}

// TestUnreachable: a version the proxy refuses is not listed; a
// proxy that cannot be asked is an error, not an absent version.
func TestUnreachable(t *testing.T) {
	for msg, want := range map[string]bool{
		"go: k8s.io/kubernetes@v9.99.0: reading https://proxy.golang.org/k8s.io/kubernetes/@v/v9.99.0.info: 403 Forbidden": false,
		"go: k8s.io/kubernetes@v1.37.9: invalid version: unknown revision v1.37.9":                                         false,
		"go: module lookup disabled by GOPROXY=off":                                                                        true,
		"dial tcp: lookup proxy.golang.org: no such host":                                                                  true,
	} {
		if got := unreachable(msg); got != want {
			t.Errorf("unreachable(%q) = %v, want %v", msg, got, want)
		}
	}
}
