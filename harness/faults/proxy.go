package faults

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// Faults are what a Proxy does to the requests passing through it. The
// zero value passes every request on untouched.
type Faults struct {
	// Latency delays every request by this much before it is passed on.
	Latency time.Duration
	// ErrorRate is the share of requests (0 to 1) answered with ErrorCode
	// instead of being passed on. The share is kept exactly, not drawn by
	// chance: of the first k requests not reset since Set, floor(k ×
	// ErrorRate) are answered so (5 % is every 20th), so a spec that
	// asserts some requests failed cannot fail by chance.
	ErrorRate float64
	// ErrorCode is the status of those answers: 500, 503 or 429 (which
	// carries Retry-After: 1, as the API server's own throttling does).
	ErrorCode int
	// ResetRate is the share of requests whose stream is reset without an
	// answer, as a dropped connection does; of the first k requests since
	// Set, floor(k × ResetRate) are.
	ResetRate float64
}

func (f Faults) String() string {
	var parts []string
	if f.Latency > 0 {
		parts = append(parts, fmt.Sprintf("%s latency", f.Latency))
	}
	if f.ErrorRate > 0 {
		parts = append(parts, fmt.Sprintf("%g%% answered %d", f.ErrorRate*100, f.ErrorCode))
	}
	if f.ResetRate > 0 {
		parts = append(parts, fmt.Sprintf("%g%% reset", f.ResetRate*100))
	}
	if len(parts) == 0 {
		return "no faults"
	}
	return strings.Join(parts, ", ")
}

// Validate reports settings a proxy cannot apply.
func (f Faults) Validate() error {
	var errs []error
	if f.Latency < 0 {
		errs = append(errs, fmt.Errorf("latency %s: must not be negative", f.Latency))
	}
	if f.ErrorRate < 0 || f.ErrorRate > 1 || f.ResetRate < 0 || f.ResetRate > 1 {
		errs = append(errs, fmt.Errorf("error rate %g, reset rate %g: shares between 0 and 1", f.ErrorRate, f.ResetRate))
	}
	if f.ErrorRate > 0 && f.ErrorCode != http.StatusTooManyRequests && (f.ErrorCode < 500 || f.ErrorCode > 599) {
		errs = append(errs, fmt.Errorf("error code %d: use 429 or a 5xx", f.ErrorCode))
	}
	return errors.Join(errs...)
}

// Stats count what a Proxy did.
type Stats struct {
	// Requests counts the requests the proxy took in: those it refused are
	// not among them, nor met any fault.
	Requests, Delayed, Errors, Resets int64
	// Refused counts the requests the proxy refused for want of
	// credentials it could pass on as the caller's own.
	Refused int64
}

// Sub is what a Proxy did between two readings of its Stats: s, the later,
// minus earlier. A spec that shares a proxy with specs before it counts
// its own requests so.
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{Requests: s.Requests - earlier.Requests, Delayed: s.Delayed - earlier.Delayed,
		Errors: s.Errors - earlier.Errors, Resets: s.Resets - earlier.Resets, Refused: s.Refused - earlier.Refused}
}

// Proxy is an HTTPS reverse proxy in front of an API server: clients
// configured with ClientConfig talk to the API server through it, each as
// itself, and suffer the Faults set on it.
//
// The proxy has no identity of its own at the API server and lends none.
// It passes a request on as the client that sent it:
//   - with a client certificate ClientConfig issued (the listener verifies
//     it against the proxy's own CA), as the client configuration
//     ClientConfig was given, with that configuration's credentials and
//     impersonation;
//   - with a bearer token and no client certificate, with that token
//     alone (a ServiceAccount's, say), which the API server judges;
//   - with neither, not at all: the proxy answers 401 itself.
//
// Impersonation headers a client sends reach the API server, which judges
// them against the client's own identity, as it would without the proxy;
// a configuration that impersonates someone itself always acts as them.
type Proxy struct {
	// URL is where clients reach the proxy (https://127.0.0.1:port).
	URL string

	timeline *Timeline
	target   *url.URL
	// caPEM is the serving certificate the proxy made itself, if it did.
	caPEM []byte
	// issuer issues the client certificates ClientConfig hands out.
	issuer *authority
	// bearer passes on requests that authenticate with a bearer token: a
	// transport with the API server's address and CA, and no credentials.
	bearer   *httputil.ReverseProxy
	listener net.Listener
	server   *http.Server
	faults   atomic.Pointer[schedule]

	mu    sync.Mutex
	stats Stats
	// clients pass on the requests of the clients ClientConfig issued a
	// certificate to, by that certificate's SHA-256, each with the
	// credentials of the configuration it was given.
	clients map[[sha256.Size]byte]*httputil.ReverseProxy
}

// NewProxy listens on a free port of 127.0.0.1 and passes requests on to
// the API server of upstream. Of upstream it takes only where the API
// server is and how to trust it (rest.AnonymousClientConfig): none of its
// credentials, so handing it an admin configuration lends nobody admin.
// Faults set are recorded on timeline.
//
// The proxy serves cert, which clients must trust under the name
// 127.0.0.1: the API server's own serving certificate does, so that a
// client configuration of the API server needs only its Host changed. A
// zero cert makes the proxy a certificate of its own; ClientConfig then
// carries it.
func NewProxy(upstream *rest.Config, cert tls.Certificate, timeline *Timeline) (*Proxy, error) {
	upstream = rest.AnonymousClientConfig(upstream)
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", upstream.Host, err)
	}
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, err
	}
	issuer, err := newAuthority("kubeharness fault proxy client CA")
	if err != nil {
		return nil, err
	}
	var caPEM []byte
	if len(cert.Certificate) == 0 {
		if cert, caPEM, err = selfSigned(); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "https://" + l.Addr().String(), timeline: timeline, target: target, listener: l, caPEM: caPEM,
		issuer: issuer, clients: map[[sha256.Size]byte]*httputil.ReverseProxy{}}
	p.faults.Store(&schedule{})
	p.bearer = p.reverseProxy(rt, nil)
	p.server = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
			// A client may come without a certificate (and is refused
			// unless it brings a bearer token); one that brings a
			// certificate the proxy did not issue fails the handshake.
			ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: issuer.pool,
		},
	}
	go func() { _ = p.server.ServeTLS(l, "", "") }()
	return p, nil
}

// reverseProxy passes requests on to the API server through rt, after
// rewrite (when set) has seen their headers.
func (p *Proxy) reverseProxy(rt http.RoundTripper, rewrite func(http.Header)) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.target)
			r.Out.Host = p.target.Host
			if rewrite != nil {
				rewrite(r.Out.Header)
			}
		},
		Transport: rt,
		// Watches stream: every event goes out as it comes in.
		FlushInterval: -1,
		// A stream the API server ends early (a restart's GOAWAY) is the
		// client's to see, not the proxy's to log.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeStatus(w, http.StatusBadGateway, "the fault proxy could not reach the API server: "+err.Error())
		},
	}
}

// Set makes the proxy apply f from now on, until the returned function is
// called (which goes back to passing requests untouched).
func (p *Proxy) Set(f Faults) (end func(), err error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	p.faults.Store(&schedule{Faults: f})
	endEvent := p.timeline.Begin("between clients and the API server: " + f.String())
	return func() {
		p.faults.Store(&schedule{})
		endEvent()
	}, nil
}

// ClientConfig is cfg (a client configuration of the API server the proxy
// stands in front of) made to go through the proxy as cfg's own identity.
// The proxy keeps cfg's credentials and impersonation and passes on the
// requests of the returned configuration with them; the returned
// configuration holds none of them, only a client certificate the proxy
// issued for it, which the API server does not trust and the proxy knows
// for as long as it runs. Its Host is URL and, when the proxy serves a
// certificate of its own, that is the one trusted.
//
// If the proxy cannot use cfg's credentials (a certificate file that is
// missing, say), every request of the returned configuration fails with
// the reason.
func (p *Proxy) ClientConfig(cfg *rest.Config) *rest.Config {
	c := rest.AnonymousClientConfig(cfg)
	c.Host, c.Dial, c.Proxy = p.URL, nil, nil
	if p.caPEM != nil {
		c.CAData, c.CAFile, c.ServerName, c.Insecure = p.caPEM, "", "", false
	}
	if err := p.register(cfg, c); err != nil {
		err = fmt.Errorf("the kubeharness fault proxy cannot pass requests on as this client: %w", err)
		c.WrapTransport = func(http.RoundTripper) http.RoundTripper { return failing{err} }
	}
	return c
}

// register issues c a client certificate and has the proxy pass on the
// requests that present it with cfg's credentials and impersonation.
func (p *Proxy) register(cfg, c *rest.Config) error {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return err
	}
	certPEM, keyPEM, sum, err := p.issuer.issue("kubeharness fault proxy client")
	if err != nil {
		return err
	}
	im := cfg.Impersonate
	impersonates := im.UserName != "" || im.UID != "" || len(im.Groups) > 0 || len(im.Extra) > 0
	rp := p.reverseProxy(rt, func(h http.Header) {
		// The request acts as cfg: not as a token sent along with the
		// certificate,
		h.Del("Authorization")
		if impersonates {
			// nor as anyone but whom cfg impersonates.
			for k := range h {
				if strings.HasPrefix(k, "Impersonate-") {
					delete(h, k)
				}
			}
		}
	})
	p.mu.Lock()
	p.clients[sum] = rp
	p.mu.Unlock()
	c.CertData, c.KeyData, c.CertFile, c.KeyFile = certPEM, keyPEM, "", ""
	return nil
}

// failing is the transport of a client configuration the proxy could not
// take on: every request fails with err.
type failing struct{ err error }

func (f failing) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return nil, f.err
}

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops the proxy and the requests in flight.
func (p *Proxy) Close() error {
	return p.server.Close()
}

// route is how r is passed on, as the client that sent it: or nil, with
// the reason to refuse it.
func (p *Proxy) route(r *http.Request) (*httputil.ReverseProxy, string) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		// The listener verified the certificate against the proxy's CA
		// (VerifyClientCertIfGiven) and the client proved it holds its key.
		if len(r.TLS.VerifiedChains) == 0 {
			return nil, "the kubeharness fault proxy did not issue this client certificate"
		}
		p.mu.Lock()
		rp := p.clients[sha256.Sum256(r.TLS.PeerCertificates[0].Raw)]
		p.mu.Unlock()
		if rp == nil {
			return nil, "the kubeharness fault proxy knows no client by this certificate"
		}
		return rp, ""
	}
	if auth := r.Header.Get("Authorization"); len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return p.bearer, ""
	}
	return nil, "the kubeharness fault proxy passes on only requests that say who sends them: with a client certificate " +
		"Proxy.ClientConfig issued (it asks for no other), or a bearer token; this one has neither, and the proxy lends no identity of its own"
}

// ServeHTTP passes one request on as the client that sent it, meeting the
// current faults, or refuses it (route).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp, refusal := p.route(r)
	if rp == nil {
		p.count(func(s *Stats) { s.Refused++ })
		writeStatus(w, http.StatusUnauthorized, refusal)
		return
	}
	sched := p.faults.Load()
	f := sched.Faults
	p.count(func(s *Stats) { s.Requests++ })
	if f.Latency > 0 {
		p.count(func(s *Stats) { s.Delayed++ })
		t := time.NewTimer(f.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if f.ResetRate > 0 && hit(sched.requests.Add(1), f.ResetRate) {
		p.count(func(s *Stats) { s.Resets++ })
		// The server resets the stream (HTTP/2) or closes the connection
		// (HTTP/1.1) without an answer.
		panic(http.ErrAbortHandler)
	}
	if f.ErrorRate > 0 && hit(sched.passed.Add(1), f.ErrorRate) {
		p.count(func(s *Stats) { s.Errors++ })
		if f.ErrorCode == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeStatus(w, f.ErrorCode, "injected by the kubeharness fault proxy")
		return
	}
	if !readWholeBody(w, r) {
		return
	}
	rp.ServeHTTP(w, r)
}

// maxRequestBody bounds the request body the proxy holds; the API server
// refuses bodies far smaller (3 MiB for most requests).
const maxRequestBody = 64 << 20

// readWholeBody replaces r's body with a copy held in memory, so that a
// request goes on to the API server only once its body has arrived whole.
// Streamed through, a body can deadlock the proxy: the API server may
// answer before reading it (403 for impersonation it refuses), the client
// then stops sending it (Go's HTTP/2 client does on any answer above 299)
// without ending its stream, and the proxy's transport, to finish the
// answer, waits for the body it is still passing on. It reports false,
// having answered the client, when the body could not be read.
func readWholeBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	_ = r.Body.Close()
	switch {
	case err != nil:
		writeStatus(w, http.StatusBadRequest, "the kubeharness fault proxy could not read the request body: "+err.Error())
		return false
	case len(body) > maxRequestBody:
		writeStatus(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the kubeharness fault proxy passes on request bodies of up to %d MiB", maxRequestBody>>20))
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return true
}

// schedule is the faults Set made current and how many requests met them:
// the shares are kept by counting, not by chance.
type schedule struct {
	Faults
	// requests counts the requests since Set; passed those not reset.
	requests, passed atomic.Int64
}

// hit reports whether the n-th request (from 1) is one of the share rate
// of requests: the first k requests hold floor(k × rate) hits.
func hit(n int64, rate float64) bool {
	return math.Floor(float64(n)*rate) > math.Floor(float64(n-1)*rate)
}

func (p *Proxy) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// writeStatus answers as the API server does: a metav1.Status, so that
// clients take it for a server error and not a malformed answer.
func writeStatus(w http.ResponseWriter, code int, message string) {
	reason := "InternalError"
	switch code {
	case http.StatusUnauthorized:
		reason = "Unauthorized"
	case http.StatusTooManyRequests:
		reason = "TooManyRequests"
	case http.StatusServiceUnavailable:
		reason = "ServiceUnavailable"
	case http.StatusBadGateway:
		reason = "BadGateway"
	case http.StatusBadRequest:
		reason = "BadRequest"
	case http.StatusRequestEntityTooLarge:
		reason = "RequestEntityTooLarge"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%s,"reason":%q,"code":%d}`,
		strconv.Quote(message), reason, code)
}
