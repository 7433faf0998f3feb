package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestFakeLifecycle(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	m := machine("vm", "u1")

	if _, ok, err := f.Get(ctx, m); ok || err != nil {
		t.Fatalf("Get before Create = %v, %v", ok, err)
	}
	if _, err := f.Usage(ctx, m); !errors.Is(err, ErrServerNotFound) {
		t.Fatalf("Usage before Create = %v, want ErrServerNotFound", err)
	}
	s, err := f.Create(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "ns_vm" || s.Image != m.Image || !s.Running || s.State != StateRunning || s.ID == "" ||
		s.CPU.Cmp(m.CPU) != 0 || s.Memory.Cmp(m.Memory) != 0 {
		t.Fatalf("Create = %+v", s)
	}
	again, err := f.Create(ctx, m)
	if err != nil || again.ID != s.ID {
		t.Fatalf("second Create = %+v, %v; want the same server %s", again, err, s.ID)
	}
	got, ok, err := f.Get(ctx, m)
	if err != nil || !ok || got.ID != s.ID {
		t.Fatalf("Get = %+v, %v, %v", got, ok, err)
	}

	// Usage moves with every call.
	var seen []Usage
	for range 3 {
		u, err := f.Usage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, u)
	}
	want := []Usage{{CPU: 10, Memory: 5}, {CPU: 20, Memory: 10}, {CPU: 30, Memory: 15}}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("Usage call %d = %+v, want %+v", i+1, seen[i], want[i])
		}
	}
	if u := DefaultFakeUsage(m, 11); u != (Usage{CPU: 10, Memory: 55}) {
		t.Errorf("DefaultFakeUsage(11) = %+v", u)
	}

	// Stopped behind the controller's back: Get tells, Usage is zero,
	// Create starts the same server again.
	if !f.Stop("ns", "vm") {
		t.Fatal("Stop found no server")
	}
	got, ok, _ = f.Get(ctx, m)
	if !ok || got.Running || got.State != StateExited {
		t.Fatalf("Get after Stop = %+v, %v", got, ok)
	}
	if u, err := f.Usage(ctx, m); err != nil || u != (Usage{}) {
		t.Fatalf("Usage of a stopped server = %+v, %v", u, err)
	}
	if s2, err := f.Create(ctx, m); err != nil || s2.ID != s.ID || !s2.Running {
		t.Fatalf("Create after Stop = %+v, %v", s2, err)
	}

	// Removed behind its back: gone, and Create makes a new one.
	if !f.Remove("ns", "vm") {
		t.Fatal("Remove found no server")
	}
	if _, ok, _ := f.Get(ctx, m); ok {
		t.Fatal("Get after Remove found a server")
	}
	s3, err := f.Create(ctx, m)
	if err != nil || s3.ID == s.ID {
		t.Fatalf("Create after Remove = %+v, %v; want a new server", s3, err)
	}

	if err := f.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete(ctx, m); err != nil {
		t.Fatalf("second Delete = %v", err)
	}
	if len(f.List()) != 0 {
		t.Fatalf("List after Delete = %+v", f.List())
	}
	if c := f.Calls(); c != (Calls{Create: 4, Delete: 2, Get: 4, Usage: 5}) {
		t.Fatalf("Calls = %+v", c)
	}
	f.ResetCalls()
	if c := f.Calls(); c != (Calls{}) {
		t.Fatalf("Calls after ResetCalls = %+v", c)
	}
}

func TestFakeFailNext(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	m := machine("vm", "u1")
	transient := errors.New("daemon busy")
	f.FailNext(OpCreate, 2, transient)
	f.FailNext(OpCreate, 1, Permanent(errors.New("quota")))
	for i := range 2 {
		if _, err := f.Create(ctx, m); !errors.Is(err, transient) || IsPermanent(err) {
			t.Fatalf("Create %d = %v, want the transient error", i+1, err)
		}
	}
	if _, err := f.Create(ctx, m); err == nil || !IsPermanent(err) {
		t.Fatalf("Create 3 = %v, want the permanent error", err)
	}
	if len(f.List()) != 0 {
		t.Fatal("a failed Create left a server")
	}
	if _, err := f.Create(ctx, m); err != nil {
		t.Fatalf("Create 4 = %v", err)
	}
	f.FailNext(OpUsage, 1, transient)
	if _, err := f.Usage(ctx, m); !errors.Is(err, transient) {
		t.Fatalf("Usage = %v", err)
	}
	if u, err := f.Usage(ctx, m); err != nil || u.CPU != 10 {
		t.Fatalf("Usage after the failure = %+v, %v (a failed call must not count as a sample)", u, err)
	}
	if c := f.Calls(); c.Create != 4 || c.Usage != 2 {
		t.Fatalf("Calls = %+v", c)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := f.Get(cancelled, m); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context = %v", err)
	}
}

func TestFakeRefusesWhatItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	f := NewFake()

	foreignID := f.AddForeign("ns", "vm", "")
	_, err := f.Create(ctx, machine("vm", "u1"))
	var notOwned *NotOwnedError
	if !errors.As(err, &notOwned) || notOwned.ID != foreignID || notOwned.OwnerUID != "" || !IsPermanent(err) {
		t.Fatalf("Create over a foreign server = %v", err)
	}
	if _, ok, _ := f.Get(ctx, machine("vm", "u1")); ok {
		t.Fatal("Get sees the foreign server")
	}
	if err := f.Delete(ctx, machine("vm", "u1")); err != nil {
		t.Fatal(err)
	}
	if l := f.List(); len(l) != 1 || !l[0].Foreign || l[0].Server.ID != foreignID {
		t.Fatalf("the foreign server was touched: %+v", l)
	}

	// A VirtualMachine created again under the same name has a new UID and
	// does not adopt its predecessor's server.
	old := machine("db", "old-uid")
	if _, err := f.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	_, err = f.Create(ctx, machine("db", "new-uid"))
	if !errors.As(err, &notOwned) || notOwned.OwnerUID != "old-uid" || notOwned.OwnerNamespace != "ns" || notOwned.OwnerName != "db" {
		t.Fatalf("Create with a new UID = %#v, want NotOwned by ns/db old-uid", err)
	}
	if err := f.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(ctx, machine("db", "new-uid")); err != nil {
		t.Fatalf("Create once the old server is deleted = %v", err)
	}
}

func TestFakeValidatesAndImages(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	bad := machine("vm", "u1")
	bad.CPU.Set(0)
	if _, err := f.Create(ctx, bad); !errors.Is(err, ErrInvalidMachine) {
		t.Fatalf("Create of an invalid machine = %v", err)
	}
	if _, _, err := f.Get(ctx, Machine{Namespace: "ns", Name: "vm"}); !errors.Is(err, ErrInvalidMachine) {
		t.Fatalf("Get without a UID = %v", err)
	}

	m := machine("vm", "u1")
	f.SetImagePresent(m.Image, false)
	_, err := f.Create(ctx, m)
	if !errors.Is(err, ErrImageNotFound) || !IsPermanent(err) {
		t.Fatalf("Create with a missing image = %v", err)
	}
	f.SetImagePresent(m.Image, true)
	if _, err := f.Create(ctx, m); err != nil {
		t.Fatal(err)
	}

	f.SetUsageFunc(func(_ Machine, n int) Usage { return Usage{CPU: float64(n), Memory: 42} })
	if u, _ := f.Usage(ctx, m); u != (Usage{CPU: 1, Memory: 42}) {
		t.Fatalf("Usage with a UsageFunc = %+v", u)
	}
	if !f.SetState("ns", "vm", StatePaused) {
		t.Fatal("SetState found no server")
	}
	if s, _, _ := f.Get(ctx, m); s.Running || s.State != StatePaused {
		t.Fatalf("Get after SetState = %+v", s)
	}
	if f.Stop("ns", "other") || f.Remove("ns", "other") {
		t.Fatal("Stop or Remove found a server that does not exist")
	}
}

func TestFakeConcurrent(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			m := machine(fmt.Sprintf("vm%d", i%4), fmt.Sprintf("u%d", i%4))
			for range 50 {
				if _, err := f.Create(ctx, m); err != nil {
					t.Error(err)
					return
				}
				_, _, _ = f.Get(ctx, m)
				_, _ = f.Usage(ctx, m)
				_ = f.List()
			}
		})
	}
	wg.Wait()
	if n := len(f.List()); n != 4 {
		t.Fatalf("%d servers, want 4", n)
	}
	if c := f.Calls(); c.Create != 400 || c.Get != 400 || c.Usage != 400 {
		t.Fatalf("Calls = %+v", c)
	}
}

func TestFakeRefusesImagesWithoutTagOrDigest(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	for _, image := range []string{"c", "c8d36865e66a", "example.com/vm", "UPPER:1"} {
		m := machine("vm", "u1")
		m.Image = image
		if _, err := f.Create(ctx, m); !errors.Is(err, ErrInvalidMachine) || !strings.Contains(err.Error(), image) {
			t.Errorf("Create with image %q = %v, want ErrInvalidMachine naming it", image, err)
		}
	}
	for i, image := range []string{"c:latest", "example.com:5000/vm/base:1.2", "vm@sha256:" + strings.Repeat("a", 64)} {
		m := machine(fmt.Sprintf("vm%d", i), fmt.Sprintf("u%d", i))
		m.Image = image
		if _, err := f.Create(ctx, m); err != nil {
			t.Errorf("Create with image %q = %v", image, err)
		}
	}
}

func TestFakeRefusesMoreThanItsCapacity(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	f.SetCapacity(Capacity{CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi")})
	for _, tc := range []struct{ cpu, memory, says string }{
		{"3", "1Gi", "cpu 3 is more"},
		{"1", "1Ei", "memory 1Ei is more"},
		{"2500m", "8Ei", "cpu 2500m and memory 9223372036854775807 are more"},
	} {
		m := machine("vm", "u1")
		m.CPU, m.Memory = resource.MustParse(tc.cpu), resource.MustParse(tc.memory)
		_, err := f.Create(ctx, m)
		if !errors.Is(err, ErrInvalidMachine) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Create with %s CPU and %s memory = %v, want ErrInvalidMachine saying %q", tc.cpu, tc.memory, err, tc.says)
		}
		if err != nil && (strings.Contains(err.Error(), "4Gi") || strings.Contains(err.Error(), " 2 ")) {
			t.Errorf("the error %q tells the host's size", err)
		}
	}
	m := machine("vm", "u1")
	m.CPU, m.Memory = resource.MustParse("2"), resource.MustParse("4Gi")
	if _, err := f.Create(ctx, m); err != nil {
		t.Errorf("Create of all the capacity = %v", err)
	}
}

func TestFakeListOwned(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	if _, err := f.Create(ctx, machine("a", "ua")); err != nil {
		t.Fatal(err)
	}
	f.AddForeign("ns", "foreign", "")
	orphan := f.AddForeign("gone", "b", "ub")
	got, err := f.ListOwned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Owner.UID != "ub" || got[0].ID != orphan || got[0].Owner.Namespace != "gone" || got[0].Owner.Name != "b" ||
		got[1].Owner.UID != "ua" || got[1].Name != "ns_a" {
		t.Fatalf("ListOwned = %+v, want the orphan of gone/b and ns/a, not the foreign server", got)
	}
}
