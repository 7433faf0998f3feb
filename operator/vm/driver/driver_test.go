package driver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// machine returns a valid Machine of namespace ns for tests.
func machine(name, uid string) Machine {
	return Machine{
		Namespace: "ns", Name: name, UID: uid,
		Image:  "example.com/vm:1",
		CPU:    resource.MustParse("500m"),
		Memory: resource.MustParse("64Mi"),
	}
}

func TestValidate(t *testing.T) {
	if err := machine("vm", "u1").Validate(); err != nil {
		t.Fatalf("valid machine: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Machine)
		want   []string
	}{
		{"zero cpu", func(m *Machine) { m.CPU = resource.MustParse("0") }, []string{"cpu must be positive, got 0"}},
		{"unset cpu", func(m *Machine) { m.CPU = resource.Quantity{} }, []string{"cpu must be positive, got 0"}},
		{"negative memory", func(m *Machine) { m.Memory = resource.MustParse("-1Gi") }, []string{"memory must be positive, got -1Gi"}},
		{"everything", func(m *Machine) { *m = Machine{} }, []string{
			"namespace is empty", "name is empty", "uid is empty", "image is empty", "cpu must be positive", "memory must be positive",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machine("vm", "u1")
			tt.change(&m)
			err := m.Validate()
			if !errors.Is(err, ErrInvalidMachine) || !IsPermanent(err) {
				t.Fatalf("Validate() = %v, want a permanent ErrInvalidMachine", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestContainerName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)
	tests := []struct{ namespace, name, want string }{
		{"default", "vm1", "default_vm1"},
		{"team-a", "web.frontend", "team-a_web.frontend"},
		// Namespace "a" with "b-c" and namespace "a-b" with "c" once both
		// made "a-b-c": the separator is a character no Kubernetes name
		// holds.
		{"a", "b-c", "a_b-c"},
		{"a-b", "c", "a-b_c"},
		{"ns", "Name_With_Underscores", "ns_Name-With-Underscores"},
		{"ns", "a b/c:d", "ns_a-b-c-d"},
		{"ns", "ünïcode", "ns_-n-code"},
		{"", "", "vm_"},
		{"", "x", "vm_x"},
		{".hidden", "x", "vm.hidden_x"},
	}
	for _, tt := range tests {
		got := ContainerName(tt.namespace, tt.name)
		if got != tt.want {
			t.Errorf("ContainerName(%q, %q) = %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
		if !valid.MatchString(got) {
			t.Errorf("ContainerName(%q, %q) = %q does not fit Docker's rule", tt.namespace, tt.name, got)
		}
	}
}

func TestClassification(t *testing.T) {
	notOwned := &NotOwnedError{Machine: machine("vm", "u2"), Name: "ns_vm", ID: "0123456789abcdef", OwnerUID: "u1"}
	tests := []struct {
		err       error
		permanent bool
		reason    string
	}{
		{nil, false, ""},
		{errors.New("connection refused"), false, "DriverError"},
		{context.DeadlineExceeded, false, "DriverError"},
		{fmt.Errorf("create: %w", ErrImageNotFound), true, "ImageNotFound"},
		{fmt.Errorf("wrapped: %w", notOwned), true, "NameConflict"},
		{machine("vm", "").Validate(), true, "InvalidSpec"},
		{fmt.Errorf("%w: x", ErrServerNotFound), true, "ServerNotFound"},
		{Permanent(errors.New("bad TLS")), true, "DriverPermanentError"},
		{fmt.Errorf("outer: %w", Permanent(errors.New("inner"))), true, "DriverPermanentError"},
	}
	for _, tt := range tests {
		if got := IsPermanent(tt.err); got != tt.permanent {
			t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.permanent)
		}
		if got := Reason(tt.err); got != tt.reason {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.reason)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
	if !errors.Is(notOwned, ErrNotOwned) {
		t.Error("NotOwnedError is not ErrNotOwned")
	}
	var target *NotOwnedError
	if !errors.As(fmt.Errorf("x: %w", notOwned), &target) || target.OwnerUID != "u1" {
		t.Error("errors.As does not find the NotOwnedError")
	}
	want := `ns/vm: server name "ns_vm" is taken by 0123456789ab, which belongs to uid u1; it is left untouched`
	if notOwned.Error() != want {
		t.Errorf("Error() = %q, want %q", notOwned.Error(), want)
	}
}

func TestForName(t *testing.T) {
	d, err := ForName("fake")
	if err != nil || d.Name() != "fake" {
		t.Fatalf(`ForName("fake") = %v, %v`, d, err)
	}
	// The docker driver is built without contacting the daemon.
	d, err = ForName("docker", WithDockerOptions(DockerOptions{Host: "tcp://127.0.0.1:1", TLS: TLSOff}))
	if err != nil || d.Name() != "docker" || d.(*Docker).Host() != "tcp://127.0.0.1:1" {
		t.Fatalf(`ForName("docker") = %v, %v`, d, err)
	}
	if _, err := ForName("qemu"); err == nil || !strings.Contains(err.Error(), "docker, fake") {
		t.Fatalf(`ForName("qemu") = %v, want an error listing the drivers`, err)
	}
	for name, want := range map[string]bool{"docker": true, "fake": true, "qemu": false, "": false} {
		if Known(name) != want {
			t.Errorf("Known(%q) = %v", name, !want)
		}
	}
}
