package faults

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// upstream is a stand-in API server that echoes who a request comes from
// (the common name of its client certificate, its Authorization header)
// and whom it acts as. The configuration it returns authenticates as
// "tenant" with a certificate of a CA the stand-in does not check.
func upstream(t *testing.T) (*httptest.Server, *rest.Config) {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case refusedUnread:
			// As the API server refuses impersonation: before reading the body.
			w.WriteHeader(http.StatusForbidden)
			return
		case bodyLength:
			body, err := io.ReadAll(r.Body)
			_, _ = fmt.Fprintf(w, "announced=%d read=%d err=%v", r.ContentLength, len(body), err)
			return
		}
		cn := "none"
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = fmt.Fprintf(w, "cn=%s auth=%s as=%s path=%s", cn, r.Header.Get("Authorization"), r.Header.Get("Impersonate-User"), r.URL.Path)
	}))
	ts.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	// HTTP/2, as the API server speaks to the proxy.
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	cert, key := clientCert(t, "tenant")
	return ts, &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: cert, KeyData: key}}
}

// refusedUnread is the stand-in's path that answers 403 without reading
// the request body; bodyLength's answer is the length the request
// announced and the length read.
const (
	refusedUnread = "/refused-unread"
	bodyLength    = "/body-length"
)

// A body the client streams without announcing its length reaches the API
// server whole, its length announced: the proxy reads it before passing
// the request on.
func TestABodyGoesOnWhole(t *testing.T) {
	p, hc := newTestProxy(t)
	// A reader of unknown length: the client sends no content-length.
	_, got := post(t, hc, p.URL+bodyLength, io.MultiReader(strings.NewReader("half"), strings.NewReader(" and half")))
	if want := "announced=13 read=13 err=<nil>"; got != want {
		t.Errorf("the stand-in API server saw %q, want %q", got, want)
	}
}

// A request the API server refuses before reading its body is answered,
// every time: the proxy passes requests on only once their body is whole,
// so that a client that stops sending its body on seeing the refusal (Go's
// HTTP/2 client does) cannot leave the proxy waiting for the rest of it.
// Streamed through, this hung one run in a few dozen.
func TestARequestRefusedBeforeItsBodyIsReadIsAnswered(t *testing.T) {
	p, hc := newTestProxy(t)
	body := bytes.Repeat([]byte("x"), 4<<10)
	for i := range 200 {
		req, err := http.NewRequest(http.MethodPost, p.URL+refusedUnread, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("request %d: %d, reading the answer: %v; want 403 read whole", i, resp.StatusCode, err)
		}
	}
}

// A body larger than the proxy holds is refused with 413 and is not
// passed on.
func TestARequestBodyTooLargeIsRefused(t *testing.T) {
	p, hc := newTestProxy(t)
	code, msg := post(t, hc, p.URL+"/api", io.LimitReader(zeros{}, maxRequestBody+1))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "64 MiB") {
		t.Errorf("a body of 64 MiB and a byte: %d %s; want 413 naming the limit", code, msg)
	}
	if s := p.Stats(); s.Requests != 1 {
		t.Errorf("stats %+v, want the one request", s)
	}
}

// post sends body to url and returns the answer's status and body.
func post(t *testing.T, hc *http.Client, url string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// clientCert is a client certificate named name, and its key, from a CA
// of its own.
func clientCert(t *testing.T, name string) (cert, key []byte) {
	t.Helper()
	ca, err := newAuthority("stand-in CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _, err = ca.issue(name)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// newTestProxy is a proxy in front of a stand-in API server, serving the
// stand-in's certificate, and a client of the stand-in's configuration
// through it.
func newTestProxy(t *testing.T) (*Proxy, *http.Client) {
	t.Helper()
	ts, cfg := upstream(t)
	p, err := NewProxy(cfg, ts.TLS.Certificates[0], &Timeline{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	through := p.ClientConfig(cfg)
	through.Insecure, through.CAData = false, pemOf(ts.Certificate())
	through.Timeout = 10 * time.Second
	hc, err := rest.HTTPClientFor(through)
	if err != nil {
		t.Fatal(err)
	}
	return p, hc
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// get sends a GET impersonating the manager's ServiceAccount, and the
// headers given as name, value pairs.
func get(t *testing.T, hc *http.Client, url string, headers ...string) (int, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Impersonate-User", "system:serviceaccount:kubeharness-system:kubeharness-manager")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func TestProxyPassesRequestsOnAsTheClientWithItsImpersonation(t *testing.T) {
	p, hc := newTestProxy(t)
	code, body, err := get(t, hc, p.URL+"/api/v1/namespaces", "Authorization", "Bearer someone-elses")
	if err != nil || code != 200 {
		t.Fatalf("got %d %q %v, want 200", code, body, err)
	}
	// The stand-in's client certificate, not the proxy's; the token sent
	// along with the proxy's certificate dropped.
	if want := "cn=tenant auth= as=system:serviceaccount:kubeharness-system:kubeharness-manager path=/api/v1/namespaces"; body != want {
		t.Errorf("upstream saw %q, want %q", body, want)
	}
	if s := p.Stats(); s != (Stats{Requests: 1}) {
		t.Errorf("stats %+v, want one untouched request", s)
	}
}

// TestProxyRefusesCallersItCannotPassOnAsThemselves: a caller with neither
// a certificate the proxy issued nor a bearer token gets nothing through
// the proxy, least of all an identity of the proxy's; a bearer token goes
// on alone.
func TestProxyRefusesCallersItCannotPassOnAsThemselves(t *testing.T) {
	ts, cfg := upstream(t)
	p, err := NewProxy(cfg, ts.TLS.Certificates[0], &Timeline{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	// caller is a client that presents cert, if given, even when the
	// proxy names CAs that did not sign it, as an attacker would.
	caller := func(cert ...tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: pool}
		if len(cert) > 0 {
			tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: tc}}
	}
	// The certificate the upstream configuration authenticates with, and
	// one issued by a CA like the proxy's: neither did the proxy issue.
	theirs, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	forgedCert, forgedKey := clientCert(t, "kubeharness fault proxy client")
	forged, err := tls.X509KeyPair(forgedCert, forgedKey)
	if err != nil {
		t.Fatal(err)
	}

	code, body, err := get(t, caller(), p.URL+"/api")
	if err != nil || code != http.StatusUnauthorized || !strings.Contains(body, `"reason":"Unauthorized"`) || !strings.Contains(body, "neither") {
		t.Errorf("without credentials: got %d %q %v, want a 401 Status saying why", code, body, err)
	}
	for name, cert := range map[string]tls.Certificate{"the upstream's own": theirs, "a forged": forged} {
		if code, body, err := get(t, caller(cert), p.URL+"/api"); err == nil {
			t.Errorf("with %s client certificate: got %d %q, want the handshake refused", name, code, body)
		}
	}
	code, body, err = get(t, caller(), p.URL+"/api", "Authorization", "Bearer a-service-account-token")
	if want := "cn=none auth=Bearer a-service-account-token as=system:serviceaccount:kubeharness-system:kubeharness-manager path=/api"; err != nil || body != want {
		t.Errorf("with a bearer token: got %d %q %v; want it passed on alone: %q", code, body, err, want)
	}
	if s := p.Stats(); s != (Stats{Requests: 1, Refused: 1}) {
		t.Errorf("stats %+v, want one refused request and one passed on (a failed handshake is no request)", s)
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
	p, hc := newTestProxy(t)
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
	cfg.Impersonate.UserName = "tenant-admin"
	p, err := NewProxy(cfg, tls.Certificate{}, &Timeline{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	through := p.ClientConfig(cfg)
	if through.Host != p.URL || through.Insecure || len(through.CAData) == 0 {
		t.Fatalf("ClientConfig: host %q insecure %v CA %d bytes; want the proxy's URL %q, verified against its own certificate", through.Host, through.Insecure, len(through.CAData), p.URL)
	}
	if bytes.Equal(through.CertData, cfg.CertData) || bytes.Equal(through.KeyData, cfg.KeyData) || through.Impersonate.UserName != "" {
		t.Fatal("ClientConfig handed out the credentials or impersonation it was given; the proxy is to hold them")
	}
	if cfg.Host == p.URL || cfg.Insecure == false || cfg.Impersonate.UserName != "tenant-admin" {
		t.Fatal("ClientConfig changed the configuration it was given")
	}
	hc, err := rest.HTTPClientFor(through)
	if err != nil {
		t.Fatal(err)
	}
	// A configuration that impersonates acts as whom it impersonates,
	// whatever its client asks for.
	code, body, err := get(t, hc, p.URL+"/api/v1/namespaces", "Impersonate-User", "someone-else")
	if err != nil {
		t.Fatalf("a client trusting only the proxy's own certificate: %v", err)
	}
	if code != http.StatusOK || body != "cn=tenant auth= as=tenant-admin path=/api/v1/namespaces" {
		t.Fatalf("got %d %q; want 200 from upstream, as the configuration's own identity and impersonation", code, body)
	}
}

// A configuration whose credentials the proxy cannot use fails each
// request with the reason, on the client's side.
func TestClientConfigOfCredentialsThatCannotBeUsedFailsItsRequests(t *testing.T) {
	p, _ := newTestProxy(t)
	_, cfg := upstream(t)
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, filepath.Join(t.TempDir(), "missing.crt"), filepath.Join(t.TempDir(), "missing.key")
	hc, err := rest.HTTPClientFor(p.ClientConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(t, hc, p.URL+"/api"); err == nil || !strings.Contains(err.Error(), "missing.crt") {
		t.Errorf("got %v, want the request failed naming the missing certificate", err)
	}
	if s := p.Stats(); s != (Stats{}) {
		t.Errorf("stats %+v: the request reached the proxy", s)
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

// requestTimeout bounds each request of the tests on a real API server.
const requestTimeout = 30 * time.Second

// TestProxyLendsNoIdentityOnARealAPIServer plays, against a real API
// server behind the proxy, the attack a proxy that forwards with an admin
// identity of its own allows: a local process with no credentials asks
// who it is (and would learn system:masters), binds itself cluster-admin,
// or impersonates alice in system:masters. Each caller must get exactly
// what its own identity gets: nothing without one, and 403 for
// impersonation its RBAC does not allow; while the admin's client still
// goes through, and faults still apply.
func TestProxyLendsNoIdentityOnARealAPIServer(t *testing.T) {
	ctx := context.Background()
	dir, root := testbins.Need(t)
	cp, err := controlplane.Start(controlplane.Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	serving, err := cp.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(cp.Config, serving, &Timeline{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	direct, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	whoami := func(cfg *rest.Config) (authenticationv1.UserInfo, error) {
		// A proxy that hangs fails the request, not the whole test binary.
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = requestTimeout
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return authenticationv1.UserInfo{}, err
		}
		return r.Status.UserInfo, nil
	}
	asAliceInMasters := func(cfg *rest.Config) *rest.Config {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:masters"}}
		return c
	}
	bindClusterAdmin := func(cfg *rest.Config, name string) error {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}},
		}, metav1.CreateOptions{})
		return err
	}
	// trusting is a caller that trusts the API server's CA and shows no
	// credentials: any local process can be one.
	trusting := func() *rest.Config {
		return &rest.Config{Host: p.URL, TLSClientConfig: rest.TLSClientConfig{CAData: cp.Config.CAData}}
	}

	t.Run("a caller without credentials is refused by the proxy", func(t *testing.T) {
		for name, cfg := range map[string]*rest.Config{"as itself": trusting(), "impersonating alice in system:masters": asAliceInMasters(trusting())} {
			if u, err := whoami(cfg); !apierrors.IsUnauthorized(err) {
				t.Errorf("%s: SelfSubjectReview says %q in %q (error %v); want 401 from the proxy", name, u.Username, u.Groups, err)
			}
		}
		if err := bindClusterAdmin(trusting(), "through-the-proxy-anonymous"); !apierrors.IsUnauthorized(err) {
			t.Errorf("creating a ClusterRoleBinding: %v; want 401 from the proxy", err)
		}
		if _, err := direct.RbacV1().ClusterRoleBindings().Get(ctx, "through-the-proxy-anonymous", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ClusterRoleBinding a caller without credentials asked for: %v; want it never created", err)
		}
	})

	t.Run("a certificate the control plane's CA signed, not ClientConfig's, is refused", func(t *testing.T) {
		mallory, err := cp.AddUser("mallory")
		if err != nil {
			t.Fatal(err)
		}
		mallory.Host = p.URL
		if u, err := whoami(mallory); err == nil {
			t.Errorf("as client-go sends it: SelfSubjectReview says %q in %q; want it refused", u.Username, u.Groups)
		}
		// Presented whatever CAs the proxy asks for, as an attacker would.
		cert, err := tls.X509KeyPair(mallory.CertData, mallory.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(cp.Config.CAData)
		forced := &rest.Config{Host: p.URL, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}}}
		if u, err := whoami(forced); err == nil {
			t.Errorf("presented anyway: SelfSubjectReview says %q in %q; want the handshake refused", u.Username, u.Groups)
		}
	})

	t.Run("a low-privileged client acts as itself and may not impersonate", func(t *testing.T) {
		bob, err := cp.AddUser("bob", "tenants")
		if err != nil {
			t.Fatal(err)
		}
		through := p.ClientConfig(bob)
		u, err := whoami(through)
		if err != nil || u.Username != "bob" || !slices.Contains(u.Groups, "tenants") || slices.Contains(u.Groups, "system:masters") {
			t.Errorf("SelfSubjectReview says %q in %q (error %v); want bob in tenants", u.Username, u.Groups, err)
		}
		if u, err := whoami(asAliceInMasters(through)); !apierrors.IsForbidden(err) {
			t.Errorf("impersonating alice in system:masters: SelfSubjectReview says %q in %q (error %v); want 403 from the API server", u.Username, u.Groups, err)
		}
		if err := bindClusterAdmin(through, "through-the-proxy-bob"); !apierrors.IsForbidden(err) {
			t.Errorf("creating a ClusterRoleBinding: %v; want 403 from the API server", err)
		}
	})

	t.Run("a kubeconfig of ClientConfig's acts as its user, as the fault environment's manager does", func(t *testing.T) {
		const manager = "system:serviceaccount:kubeharness-system:kubeharness-manager"
		own, err := cp.AddUser(manager, "system:serviceaccounts", "system:serviceaccounts:kubeharness-system")
		if err != nil {
			t.Fatal(err)
		}
		data, err := controlplane.UserKubeConfig(p.ClientConfig(own), manager)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != p.URL || bytes.Equal(cfg.CertData, own.CertData) {
			t.Errorf("the kubeconfig points at %s with the user's own certificate: %v; want the proxy, with the certificate the proxy issued", cfg.Host, bytes.Equal(cfg.CertData, own.CertData))
		}
		if u, err := whoami(cfg); err != nil || u.Username != manager || slices.Contains(u.Groups, "system:masters") {
			t.Errorf("SelfSubjectReview says %q in %q (error %v); want %s", u.Username, u.Groups, err, manager)
		}
	})

	t.Run("a ServiceAccount token goes on alone", func(t *testing.T) {
		sa, err := direct.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "proxy-tester"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := direct.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		withToken := trusting()
		withToken.BearerToken = tr.Status.Token
		u, err := whoami(withToken)
		if want := "system:serviceaccount:default:proxy-tester"; err != nil || u.Username != want {
			t.Errorf("SelfSubjectReview says %q in %q (error %v); want %s", u.Username, u.Groups, err, want)
		}
		if u, err := whoami(asAliceInMasters(withToken)); !apierrors.IsForbidden(err) {
			t.Errorf("impersonating alice in system:masters: SelfSubjectReview says %q in %q (error %v); want 403 from the API server", u.Username, u.Groups, err)
		}
	})

	t.Run("the admin's client goes through and meets the faults", func(t *testing.T) {
		through := p.ClientConfig(cp.Config)
		u, err := whoami(through)
		if err != nil || !slices.Contains(u.Groups, "system:masters") {
			t.Fatalf("SelfSubjectReview says %q in %q (error %v); want the admin, in system:masters", u.Username, u.Groups, err)
		}
		before := p.Stats()
		end, err := p.Set(Faults{ErrorRate: 1, ErrorCode: http.StatusServiceUnavailable})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := whoami(through); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("with every request answered 503: %v; want 503", err)
		}
		end()
		if _, err := whoami(through); err != nil {
			t.Errorf("after the fault ended: %v", err)
		}
		if d := p.Stats().Sub(before); d.Requests != 2 || d.Errors != 1 {
			t.Errorf("stats over the fault: %+v; want two requests, one answered 503", d)
		}
	})
}
