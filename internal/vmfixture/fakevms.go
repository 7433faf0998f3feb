package vmfixture

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// FakeVMs steers the fake driver of the suite's VirtualMachine controller.
// The controller runs in Ginkgo's first process; the other processes of a
// parallel run reach its driver over a loopback HTTP endpoint, so every
// method can fail and says so.
type FakeVMs interface {
	// List returns the servers the driver holds, sorted by name.
	List() ([]driver.FakeServer, error)
	// Calls counts the driver calls of every controller so far.
	Calls() (driver.Calls, error)
	// SetImagePresent makes image present or missing for new servers.
	SetImagePresent(image string, present bool) error
	// SetUsage makes the servers of VirtualMachines in namespace report u;
	// nil gives them the driver's moving default back.
	SetUsage(namespace string, u *driver.Usage) error
	// Stop and Remove change the server of namespace/name behind the
	// controller's back, as docker stop and docker rm -f would; they report
	// whether there was one.
	Stop(namespace, name string) (bool, error)
	Remove(namespace, name string) (bool, error)
	// AddForeign adds a server of that name the controller does not own
	// (see driver.Fake.AddForeign) and returns its ID.
	AddForeign(namespace, name, ownerUID string) (string, error)
}

// LocalFakeVMs steers fake in this process. It owns fake's usage function:
// namespaces given a usage with SetUsage report it, the others the default.
func LocalFakeVMs(fake *driver.Fake) FakeVMs {
	l := &localFakeVMs{fake: fake, usage: map[string]driver.Usage{}}
	fake.SetUsageFunc(l.usageOf)
	return l
}

type localFakeVMs struct {
	fake  *driver.Fake
	mu    sync.Mutex
	usage map[string]driver.Usage
}

func (l *localFakeVMs) usageOf(m driver.Machine, n int) driver.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.usage[m.Namespace]; ok {
		return u
	}
	return driver.DefaultFakeUsage(m, n)
}

func (l *localFakeVMs) List() ([]driver.FakeServer, error) { return l.fake.List(), nil }
func (l *localFakeVMs) Calls() (driver.Calls, error)       { return l.fake.Calls(), nil }
func (l *localFakeVMs) SetImagePresent(image string, present bool) error {
	l.fake.SetImagePresent(image, present)
	return nil
}

func (l *localFakeVMs) SetUsage(namespace string, u *driver.Usage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u == nil {
		delete(l.usage, namespace)
	} else {
		l.usage[namespace] = *u
	}
	return nil
}

func (l *localFakeVMs) Stop(namespace, name string) (bool, error) {
	return l.fake.Stop(namespace, name), nil
}

func (l *localFakeVMs) Remove(namespace, name string) (bool, error) {
	return l.fake.Remove(namespace, name), nil
}

func (l *localFakeVMs) AddForeign(namespace, name, ownerUID string) (string, error) {
	return l.fake.AddForeign(namespace, name, ownerUID), nil
}

// fakeCall is one FakeVMs call over the wire, and fakeReply its answer.
type fakeCall struct {
	Op        string        `json:"op"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name,omitempty"`
	Image     string        `json:"image,omitempty"`
	OwnerUID  string        `json:"ownerUID,omitempty"`
	Present   bool          `json:"present,omitempty"`
	Usage     *driver.Usage `json:"usage,omitempty"`
}

type fakeReply struct {
	Servers []driver.FakeServer `json:"servers,omitempty"`
	Calls   driver.Calls        `json:"calls"`
	Found   bool                `json:"found,omitempty"`
	ID      string              `json:"id,omitempty"`
}

const fakeTokenHeader = "X-Kubeharness-Token"

// ServeFakeVMs serves f on a loopback port for the other processes of a
// parallel run; callers must send the returned token. stop closes it.
func ServeFakeVMs(f FakeVMs) (url, token string, stop func(), err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", "", nil, err
	}
	token = hex.EncodeToString(raw)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(fakeTokenHeader)), []byte(token)) != 1 {
			http.Error(w, "wrong or missing "+fakeTokenHeader, http.StatusUnauthorized)
			return
		}
		var c fakeCall
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, "decoding the call: "+err.Error(), http.StatusBadRequest)
			return
		}
		rep, err := serveFakeCall(f, c)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), token, func() { _ = srv.Close() }, nil
}

func serveFakeCall(f FakeVMs, c fakeCall) (fakeReply, error) {
	var rep fakeReply
	var err error
	switch c.Op {
	case "list":
		rep.Servers, err = f.List()
	case "calls":
		rep.Calls, err = f.Calls()
	case "image":
		err = f.SetImagePresent(c.Image, c.Present)
	case "usage":
		err = f.SetUsage(c.Namespace, c.Usage)
	case "stop":
		rep.Found, err = f.Stop(c.Namespace, c.Name)
	case "remove":
		rep.Found, err = f.Remove(c.Namespace, c.Name)
	case "foreign":
		rep.ID, err = f.AddForeign(c.Namespace, c.Name, c.OwnerUID)
	default:
		err = fmt.Errorf("unknown operation %q", c.Op)
	}
	return rep, err
}

// RemoteFakeVMs steers the fake driver ServeFakeVMs serves at url.
func RemoteFakeVMs(url, token string) FakeVMs {
	return &remoteFakeVMs{url: url, token: token, http: &http.Client{Timeout: 10 * time.Second}}
}

type remoteFakeVMs struct {
	url, token string
	http       *http.Client
}

func (r *remoteFakeVMs) call(c fakeCall) (fakeReply, error) {
	var rep fakeReply
	body, err := json.Marshal(c)
	if err != nil {
		return rep, err
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return rep, err
	}
	req.Header.Set(fakeTokenHeader, r.token)
	resp, err := r.http.Do(req)
	if err != nil {
		return rep, fmt.Errorf("fake driver in Ginkgo's first process (%s): %w", r.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return rep, fmt.Errorf("fake driver %s %q: %s: %s", r.url, c.Op, resp.Status, bytes.TrimSpace(msg.Bytes()))
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("fake driver %s %q: decoding the reply: %w", r.url, c.Op, err)
	}
	return rep, nil
}

func (r *remoteFakeVMs) List() ([]driver.FakeServer, error) {
	rep, err := r.call(fakeCall{Op: "list"})
	return rep.Servers, err
}

func (r *remoteFakeVMs) Calls() (driver.Calls, error) {
	rep, err := r.call(fakeCall{Op: "calls"})
	return rep.Calls, err
}

func (r *remoteFakeVMs) SetImagePresent(image string, present bool) error {
	_, err := r.call(fakeCall{Op: "image", Image: image, Present: present})
	return err
}

func (r *remoteFakeVMs) SetUsage(namespace string, u *driver.Usage) error {
	if namespace == "" {
		return errors.New("SetUsage needs a namespace")
	}
	_, err := r.call(fakeCall{Op: "usage", Namespace: namespace, Usage: u})
	return err
}

func (r *remoteFakeVMs) Stop(namespace, name string) (bool, error) {
	rep, err := r.call(fakeCall{Op: "stop", Namespace: namespace, Name: name})
	return rep.Found, err
}

func (r *remoteFakeVMs) Remove(namespace, name string) (bool, error) {
	rep, err := r.call(fakeCall{Op: "remove", Namespace: namespace, Name: name})
	return rep.Found, err
}

func (r *remoteFakeVMs) AddForeign(namespace, name, ownerUID string) (string, error) {
	rep, err := r.call(fakeCall{Op: "foreign", Namespace: namespace, Name: name, OwnerUID: ownerUID})
	return rep.ID, err
}
