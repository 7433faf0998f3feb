package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Op names a Driver method, for the Fake's knobs and counters.
type Op string

// The Driver methods.
const (
	OpCreate Op = "Create"
	OpDelete Op = "Delete"
	OpGet    Op = "Get"
	OpUsage  Op = "Usage"
	OpList   Op = "ListOwned"
)

// Calls counts the calls made to a Fake, failed ones included.
type Calls struct {
	Create, Delete, Get, Usage, List int
}

// FakeServer is a server the Fake holds, as List reports it.
type FakeServer struct {
	// Machine it was created for (as of the last Create); for a server
	// added with AddForeign only Namespace, Name and UID (the owner UID
	// given) are set.
	Machine Machine
	Server  Server
	// Foreign is true for a server added with AddForeign without an owner
	// UID.
	Foreign bool
	// UsageCalls is how many Usage calls it has answered.
	UsageCalls int
}

// UsageFunc computes the usage the Fake reports for the n-th Usage call
// (n starts at 1) answered for a running server.
type UsageFunc func(m Machine, n int) Usage

// DefaultFakeUsage is the Fake's usage: it moves with every call, so that a
// spec sees the controller refresh it. CPU goes 10, 20, ..., 100 and again
// from 10; Memory goes 5, 10, ..., 100 and again from 5.
func DefaultFakeUsage(_ Machine, n int) Usage {
	return Usage{
		CPU:    float64(10 * (1 + (n-1)%10)),
		Memory: float64(5 * (1 + (n-1)%20)),
	}
}

// Fake is an in-memory Driver for specs that need no Docker. It follows the
// docker driver's rules (servers found by UID, named by ContainerName, a
// name taken by another UID refused with a *NotOwnedError, a stopped server
// started again by Create, Machines validated) and adds knobs to fail calls,
// change servers behind the caller's back and count calls. The zero value
// is not usable; call NewFake. It is safe for concurrent use.
type Fake struct {
	mu        sync.Mutex
	servers   map[string]*fakeServer // by container name
	nextID    int
	missing   map[string]bool // images reported missing
	failures  map[Op][]error
	calls     Calls
	usageFunc UsageFunc
	capacity  Capacity
}

type fakeServer struct {
	machine    Machine
	server     Server
	foreign    bool
	usageCalls int
}

var _ Driver = (*Fake)(nil)

// NewFake returns an empty Fake: every image is present, no call fails.
func NewFake() *Fake {
	return &Fake{
		servers:   map[string]*fakeServer{},
		missing:   map[string]bool{},
		failures:  map[Op][]error{},
		usageFunc: DefaultFakeUsage,
		capacity:  DefaultFakeCapacity(),
	}
}

// DefaultFakeCapacity is the host a Fake has until SetCapacity changes it:
// 16 CPUs and 64Gi of memory.
func DefaultFakeCapacity() Capacity {
	return Capacity{CPU: resource.MustParse("16"), Memory: resource.MustParse("64Gi")}
}

// Name returns "fake".
func (f *Fake) Name() string { return FakeDriverName }

// Create implements Driver.
func (f *Fake) Create(ctx context.Context, m Machine) (Server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.Create++
	if err := f.begin(ctx, OpCreate); err != nil {
		return Server{}, err
	}
	if err := m.Validate(); err != nil {
		return Server{}, err
	}
	if over := f.capacity.Exceeds(m); over != "" {
		return Server{}, invalidMachine(m, over)
	}
	name := ContainerName(m.Namespace, m.Name)
	if s, ok := f.servers[name]; ok {
		if s.foreign || s.machine.UID != m.UID {
			e := &NotOwnedError{Machine: m, Name: name, ID: s.server.ID}
			if !s.foreign {
				e.OwnerUID, e.OwnerNamespace, e.OwnerName = s.machine.UID, s.machine.Namespace, s.machine.Name
			}
			return Server{}, e
		}
		if s.server.State == StateRemoving {
			return Server{}, fmt.Errorf("server %s of %s is being removed", name, m)
		}
		s.machine = m
		s.server.State, s.server.Running = StateRunning, true
		return s.server, nil
	}
	if f.missing[m.Image] {
		return Server{}, fmt.Errorf("%w: %s is not present (machine %s/%s)", ErrImageNotFound, m.Image, m.Namespace, m.Name)
	}
	f.nextID++
	s := &fakeServer{
		machine: m,
		server: Server{
			ID:      fmt.Sprintf("fake-%06d", f.nextID),
			Name:    name,
			Image:   m.Image,
			State:   StateRunning,
			Running: true,
			CPU:     m.CPU.DeepCopy(),
			Memory:  m.Memory.DeepCopy(),
		},
	}
	f.servers[name] = s
	return s.server, nil
}

// Delete implements Driver.
func (f *Fake) Delete(ctx context.Context, m Machine) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.Delete++
	if err := f.begin(ctx, OpDelete); err != nil {
		return err
	}
	if err := m.validateRef(); err != nil {
		return err
	}
	if name, _ := f.find(m.UID); name != "" {
		delete(f.servers, name)
	}
	return nil
}

// Get implements Driver.
func (f *Fake) Get(ctx context.Context, m Machine) (Server, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.Get++
	if err := f.begin(ctx, OpGet); err != nil {
		return Server{}, false, err
	}
	if err := m.validateRef(); err != nil {
		return Server{}, false, err
	}
	if _, s := f.find(m.UID); s != nil {
		return s.server, true, nil
	}
	return Server{}, false, nil
}

// Usage implements Driver: the UsageFunc's value for a running server
// (DefaultFakeUsage unless SetUsageFunc changed it), zero for one that is
// not running.
func (f *Fake) Usage(ctx context.Context, m Machine) (Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.Usage++
	if err := f.begin(ctx, OpUsage); err != nil {
		return Usage{}, err
	}
	if err := m.Validate(); err != nil {
		return Usage{}, err
	}
	_, s := f.find(m.UID)
	if s == nil {
		return Usage{}, fmt.Errorf("%w: %s", ErrServerNotFound, m)
	}
	if !s.server.Running {
		return Usage{}, nil
	}
	s.usageCalls++
	return f.usageFunc(m, s.usageCalls), nil
}

// ListOwned implements Driver: every server but the foreign ones (AddForeign
// without an owner UID), sorted by name.
func (f *Fake) ListOwned(ctx context.Context) ([]OwnedServer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.List++
	if err := f.begin(ctx, OpList); err != nil {
		return nil, err
	}
	var out []OwnedServer
	for _, s := range f.servers {
		if s.foreign {
			continue
		}
		out = append(out, OwnedServer{ID: s.server.ID, Name: s.server.Name, Owner: Machine{
			Namespace: s.machine.Namespace, Name: s.machine.Name, UID: s.machine.UID,
		}})
	}
	slices.SortFunc(out, func(a, b OwnedServer) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Capacity implements Driver: DefaultFakeCapacity unless SetCapacity
// changed it.
func (f *Fake) Capacity(ctx context.Context) (Capacity, error) {
	if err := ctx.Err(); err != nil {
		return Capacity{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.capacity, nil
}

// SetCapacity changes the host's capacity, which Create refuses Machines
// above.
func (f *Fake) SetCapacity(c Capacity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.capacity = c
}

// begin applies a context that is done and the failures queued for op.
// f.mu is held.
func (f *Fake) begin(ctx context.Context, op Op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if q := f.failures[op]; len(q) > 0 {
		f.failures[op] = q[1:]
		return q[0]
	}
	return nil
}

// find returns the name and the server owned by uid, if any. f.mu is held.
func (f *Fake) find(uid string) (string, *fakeServer) {
	for name, s := range f.servers {
		if !s.foreign && s.machine.UID == uid {
			return name, s
		}
	}
	return "", nil
}

// FailNext makes the next n calls of op fail with err, before any other
// effect (the calls are still counted). Wrap err with Permanent to have it
// classified permanent; a plain error is transient. Calls queue up:
// FailNext(OpCreate, 2, a) then FailNext(OpCreate, 1, b) fails the next
// three creates with a, a, b.
func (f *Fake) FailNext(op Op, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failures[op] = append(f.failures[op], err)
	}
}

// SetImagePresent makes image present (the default for every image) or
// missing, in which case Create of a new server for it fails with
// ErrImageNotFound. Existing servers are not affected.
func (f *Fake) SetImagePresent(image string, present bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if present {
		delete(f.missing, image)
	} else {
		f.missing[image] = true
	}
}

// SetUsageFunc replaces the function Usage answers with; nil restores
// DefaultFakeUsage.
func (f *Fake) SetUsageFunc(fn UsageFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fn == nil {
		fn = DefaultFakeUsage
	}
	f.usageFunc = fn
}

// SetState changes the state of the server named ContainerName(namespace,
// name) behind the caller's back, as `docker stop` (StateExited), `docker
// pause` (StatePaused) or a crash would; Running follows the state. It
// reports whether there was such a server.
func (f *Fake) SetState(namespace, name, state string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.servers[ContainerName(namespace, name)]
	if ok {
		s.server.State, s.server.Running = state, state == StateRunning
	}
	return ok
}

// Stop marks the server of namespace/name exited behind the caller's back,
// as `docker stop` would. It reports whether there was such a server.
func (f *Fake) Stop(namespace, name string) bool {
	return f.SetState(namespace, name, StateExited)
}

// Remove deletes the server of namespace/name behind the caller's back, as
// `docker rm -f` would. It reports whether there was such a server.
func (f *Fake) Remove(namespace, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := ContainerName(namespace, name)
	_, ok := f.servers[n]
	delete(f.servers, n)
	return ok
}

// AddForeign adds a running server named ContainerName(namespace, name)
// that the next Machine of that name does not own. With ownerUID "" it
// stands for a container created by someone else: no Machine owns it, and
// Get and Delete never see it. With an owner UID it stands for the leftover
// of an earlier VirtualMachine of that name: Get and Delete of a Machine
// with that UID see it (so a controller can clean it up). Either way Create
// for that name and another UID fails with a *NotOwnedError. It replaces
// any server of that name and returns its ID.
func (f *Fake) AddForeign(namespace, name, ownerUID string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	n := ContainerName(namespace, name)
	s := &fakeServer{
		machine: Machine{Namespace: namespace, Name: name, UID: ownerUID},
		server:  Server{ID: fmt.Sprintf("fake-%06d", f.nextID), Name: n, State: StateRunning, Running: true},
		foreign: ownerUID == "",
	}
	f.servers[n] = s
	return s.server.ID
}

// Calls returns the calls counted so far.
func (f *Fake) Calls() Calls {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// ResetCalls sets the counters back to zero.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = Calls{}
}

// List returns the servers held, sorted by name.
func (f *Fake) List() []FakeServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FakeServer, 0, len(f.servers))
	for _, s := range f.servers {
		out = append(out, FakeServer{Machine: s.machine, Server: s.server, Foreign: s.foreign, UsageCalls: s.usageCalls})
	}
	slices.SortFunc(out, func(a, b FakeServer) int { return strings.Compare(a.Server.Name, b.Server.Name) })
	return out
}
