package faults

import (
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
	Requests, Delayed, Errors, Resets int64
}

// Sub is what a Proxy did between two readings of its Stats: s, the later,
// minus earlier. A spec that shares a proxy with specs before it counts
// its own requests so.
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{Requests: s.Requests - earlier.Requests, Delayed: s.Delayed - earlier.Delayed,
		Errors: s.Errors - earlier.Errors, Resets: s.Resets - earlier.Resets}
}

// Proxy is an HTTPS reverse proxy in front of an API server: clients
// configured with Config talk to the API server through it, with the same
// credentials and impersonation, and suffer the Faults set on it.
type Proxy struct {
	// URL is where clients reach the proxy (https://127.0.0.1:port): a
	// client configuration of the API server with its Host set to URL
	// goes through the proxy.
	URL string

	timeline *Timeline
	// caPEM is the certificate the proxy made itself, if it did.
	caPEM    []byte
	listener net.Listener
	server   *http.Server
	rp       *httputil.ReverseProxy
	faults   atomic.Pointer[schedule]

	mu    sync.Mutex
	stats Stats
}

// NewProxy listens on a free port of 127.0.0.1 and passes requests on to
// the API server of upstream, authenticating with upstream's credentials.
// Headers are passed on as they come, so a client's impersonation reaches
// the API server. Faults set are recorded on timeline.
//
// The proxy serves cert, which clients must trust under the name
// 127.0.0.1: the API server's own serving certificate does, so that a
// client configuration of the API server needs only its Host changed. A
// zero cert makes the proxy a certificate of its own; ClientConfig then
// carries it.
func NewProxy(upstream *rest.Config, cert tls.Certificate, timeline *Timeline) (*Proxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", upstream.Host, err)
	}
	rt, err := rest.TransportFor(upstream)
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
	p := &Proxy{URL: "https://" + l.Addr().String(), timeline: timeline, listener: l, caPEM: caPEM}
	p.faults.Store(&schedule{})
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
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
	p.server = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
	}
	go func() { _ = p.server.ServeTLS(l, "", "") }()
	return p, nil
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
// stands in front of) made to go through the proxy: its Host is URL and,
// when the proxy serves a certificate of its own, that is the one trusted.
// Credentials and impersonation stay as cfg has them.
func (p *Proxy) ClientConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = p.URL
	if p.caPEM != nil {
		c.CAData, c.CAFile, c.ServerName, c.Insecure = p.caPEM, "", "", false
	}
	return c
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

// ServeHTTP applies the current faults to one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	p.rp.ServeHTTP(w, r)
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
	case http.StatusTooManyRequests:
		reason = "TooManyRequests"
	case http.StatusServiceUnavailable:
		reason = "ServiceUnavailable"
	case http.StatusBadGateway:
		reason = "BadGateway"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%s,"reason":%q,"code":%d}`,
		strconv.Quote(message), reason, code)
}
