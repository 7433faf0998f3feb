package faults

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// upstream is a stand-in API server that echoes who the request acts as.
func upstream(t *testing.T) (*httptest.Server, *rest.Config) {
	t.Helper()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "as="+r.Header.Get("Impersonate-User")+" path="+r.URL.Path)
	}))
	t.Cleanup(ts.Close)
	return ts, &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

func newTestProxy(t *testing.T) (*Proxy, *http.Client, *Timeline) {
	t.Helper()
	ts, cfg := upstream(t)
	tl := &Timeline{}
	p, err := NewProxy(cfg, ts.TLS.Certificates[0], tl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
	return p, hc, tl
}

func get(t *testing.T, hc *http.Client, url string) (int, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Impersonate-User", "system:serviceaccount:kubeharness-system:kubeharness-manager")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func TestProxyPassesRequestsOnWithTheirImpersonation(t *testing.T) {
	p, hc, _ := newTestProxy(t)
	code, body, err := get(t, hc, p.URL+"/api/v1/namespaces")
	if err != nil || code != 200 {
		t.Fatalf("got %d %q %v, want 200", code, body, err)
	}
	if want := "as=system:serviceaccount:kubeharness-system:kubeharness-manager path=/api/v1/namespaces"; body != want {
		t.Errorf("upstream saw %q, want %q", body, want)
	}
	if s := p.Stats(); s.Requests != 1 || s.Errors+s.Resets+s.Delayed != 0 {
		t.Errorf("stats %+v, want one untouched request", s)
	}
}

func TestProxyInjectsErrorsResetsAndLatencyUntilEnded(t *testing.T) {
	p, hc, tl := newTestProxy(t)

	end, err := p.Set(Faults{ErrorRate: 1, ErrorCode: 503})
	if err != nil {
		t.Fatal(err)
	}
	code, body, err := get(t, hc, p.URL+"/api")
	if err != nil || code != 503 || !strings.Contains(body, `"reason":"ServiceUnavailable"`) || !strings.Contains(body, `"kind":"Status"`) {
		t.Errorf("with every request failed: got %d %q %v, want a 503 Status", code, body, err)
	}
	end()
	if code, _, err := get(t, hc, p.URL+"/api"); err != nil || code != 200 {
		t.Errorf("after the fault ended: got %d %v, want 200", code, err)
	}

	end, err = p.Set(Faults{ResetRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := get(t, hc, p.URL+"/api"); err == nil {
		t.Errorf("with every request reset: got %d %q, want a transport error", code, body)
	}
	end()

	end, err = p.Set(Faults{Latency: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code, _, err := get(t, hc, p.URL+"/api"); err != nil || code != 200 {
		t.Errorf("with latency: got %d %v, want 200", code, err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("with 200ms latency the request took %s", took)
	}
	end()

	if s := p.Stats(); s.Errors != 1 || s.Resets != 1 || s.Delayed != 1 {
		t.Errorf("stats %+v, want one error, one reset, one delayed", s)
	}
	before := p.Stats()
	if _, _, err := get(t, hc, p.URL+"/api"); err != nil {
		t.Fatal(err)
	}
	if d := p.Stats().Sub(before); d != (Stats{Requests: 1}) {
		t.Errorf("Stats().Sub over one untouched request: %+v, want one request and nothing else", d)
	}
	events := tl.Events()
	if len(events) != 3 {
		t.Fatalf("timeline %v, want the three faults", events)
	}
	for _, e := range events {
		if e.End.IsZero() || e.End.Before(e.Start) {
			t.Errorf("fault %q not closed: %+v", e.What, e)
		}
	}
	if s := tl.String(); !strings.Contains(s, "503") || !strings.Contains(s, "reset") || !strings.Contains(s, "200ms latency") {
		t.Errorf("timeline text does not say what was injected:\n%s", s)
	}
}

func TestFaultsValidate(t *testing.T) {
	for _, f := range []Faults{
		{Latency: -time.Second},
		{ErrorRate: 1.5, ErrorCode: 500},
		{ErrorRate: 0.1, ErrorCode: 404},
		{ResetRate: -0.1},
	} {
		if err := f.Validate(); err == nil {
			t.Errorf("%+v: accepted, want an error", f)
		}
	}
	if err := (Faults{Latency: time.Second, ErrorRate: 0.05, ErrorCode: 429, ResetRate: 0.01}).Validate(); err != nil {
		t.Errorf("valid faults refused: %v", err)
	}
}

// TestSharesAreKeptExactly: a share of requests is a schedule, not a draw,
// so "5 % answered 500" fails the 20th, 40th, ... request and a spec that
// asserts some requests failed cannot fail by chance.
func TestSharesAreKeptExactly(t *testing.T) {
	p, hc, _ := newTestProxy(t)
	end, err := p.Set(Faults{ErrorRate: 0.05, ErrorCode: 500, ResetRate: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	var failedAt, resetAt []int
	for i := 1; i <= 120; i++ {
		code, _, err := get(t, hc, p.URL+"/api")
		switch {
		case err != nil:
			resetAt = append(resetAt, i)
		case code == 500:
			failedAt = append(failedAt, i)
		case code != 200:
			t.Fatalf("request %d: %d", i, code)
		}
	}
	// Resets count every request; errors count those not reset.
	wantResets := []int{20, 40, 60, 80, 100, 120}
	wantErrors := []int{21, 42, 63, 84, 105}
	if !slices.Equal(resetAt, wantResets) || !slices.Equal(failedAt, wantErrors) {
		t.Errorf("reset at %v, failed at %v; want reset at %v, failed at %v", resetAt, failedAt, wantResets, wantErrors)
	}
	if s := p.Stats(); s.Resets != 6 || s.Errors != 5 || s.Requests != 120 {
		t.Errorf("stats %+v, want 120 requests, 6 resets, 5 errors", s)
	}
}

func TestHitKeepsTheShare(t *testing.T) {
	for _, rate := range []float64{0.05, 0.1, 0.3, 1.0 / 3, 0.5, 1} {
		hits := 0
		for n := int64(1); n <= 1000; n++ {
			if hit(n, rate) {
				hits++
			}
			if want := int(float64(n) * rate); hits != want {
				t.Fatalf("rate %g: %d hits in the first %d requests, want %d", rate, hits, n, want)
			}
		}
	}
}

func TestProxyMakesItsOwnCertificateAndClientConfigTrustsIt(t *testing.T) {
	_, cfg := upstream(t)
	cfg.Impersonate.UserName = "tenant"
	p, err := NewProxy(cfg, tls.Certificate{}, &Timeline{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	through := p.ClientConfig(cfg)
	if through.Host != p.URL || through.Insecure || len(through.CAData) == 0 {
		t.Fatalf("ClientConfig: host %q insecure %v CA %d bytes; want the proxy's URL %q, verified against its own certificate", through.Host, through.Insecure, len(through.CAData), p.URL)
	}
	if cfg.Host == p.URL || len(cfg.CAData) != 0 {
		t.Fatal("ClientConfig changed the configuration it was given")
	}
	hc, err := rest.HTTPClientFor(through)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(p.URL + "/api/v1/namespaces")
	if err != nil {
		t.Fatalf("a client trusting only the proxy's own certificate: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "as=tenant path=/api/v1/namespaces" {
		t.Fatalf("got %d %q; want 200 from upstream, with the client's impersonation", resp.StatusCode, body)
	}
}

func TestTimelineSinceKeepsWhatBeganOrLastedSince(t *testing.T) {
	tl := &Timeline{}
	tl.Mark("before")
	lasting := tl.Begin("lasting")
	endEarly := tl.Begin("ended before")
	endEarly()
	cut := time.Now()
	tl.Mark("after")
	lasting()
	var got []string
	for _, e := range tl.Since(cut).Events() {
		got = append(got, e.What)
	}
	if want := []string{"lasting", "after"}; !slices.Equal(got, want) {
		t.Errorf("Since: %q, want %q", got, want)
	}
}
