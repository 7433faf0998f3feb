package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Machine identifies a VirtualMachine and what it asks for. It carries no
// API types, so that this package imports nothing of the operator.
type Machine struct {
	// Namespace and Name of the VirtualMachine; the server's name is derived
	// from them (see ContainerName).
	Namespace, Name string
	// UID of the VirtualMachine. Servers are found by it: a VirtualMachine
	// deleted and created again under the same name has a new UID and never
	// adopts the server of its predecessor.
	UID string
	// Image the server runs.
	Image string
	// CPU is the CPU limit in cores (1, 500m, 2500m).
	CPU resource.Quantity
	// Memory is the memory limit in bytes (64Mi, 1Gi, 4G).
	Memory resource.Quantity
}

// String returns namespace/name (uid), for messages.
func (m Machine) String() string {
	return fmt.Sprintf("%s/%s (uid %s)", m.Namespace, m.Name, m.UID)
}

// Validate reports, in one error wrapping ErrInvalidMachine, every field
// that Create cannot work with: empty namespace, name, UID or image, and a
// CPU or memory limit that is not positive.
func (m Machine) Validate() error {
	var problems []string
	if m.Namespace == "" {
		problems = append(problems, "namespace is empty")
	}
	if m.Name == "" {
		problems = append(problems, "name is empty")
	}
	if m.UID == "" {
		problems = append(problems, "uid is empty")
	}
	if strings.TrimSpace(m.Image) == "" {
		problems = append(problems, "image is empty")
	} else if err := ValidateImage(m.Image); err != nil {
		problems = append(problems, err.Error())
	}
	if m.CPU.Sign() <= 0 {
		problems = append(problems, fmt.Sprintf("cpu must be positive, got %s", m.CPU.String()))
	}
	if m.Memory.Sign() <= 0 {
		problems = append(problems, fmt.Sprintf("memory must be positive, got %s", m.Memory.String()))
	}
	if len(problems) == 0 {
		return nil
	}
	return invalidMachine(m, problems...)
}

// validateRef checks what Get and Delete need: the UID servers are found by.
func (m Machine) validateRef() error {
	if m.UID == "" {
		return invalidMachine(m, "uid is empty")
	}
	return nil
}

func invalidMachine(m Machine, problems ...string) error {
	return fmt.Errorf("%w %s/%s: %s", ErrInvalidMachine, m.Namespace, m.Name, strings.Join(problems, "; "))
}

// Server is what a driver runs for a Machine.
type Server struct {
	// ID of the server (the container ID for docker).
	ID string
	// Name of the server (the container name, see ContainerName).
	Name string
	// Image the server was created from.
	Image string
	// State in Docker's words: one of the State* constants.
	State string
	// Running is true when State is StateRunning.
	Running bool
	// CPU and Memory are the limits the server has, which are the Machine's
	// at the time the server was created: Create does not change an
	// existing server, so a caller compares Image, CPU and Memory with the
	// Machine to see a changed spec (and deletes and creates the server to
	// apply it).
	CPU, Memory resource.Quantity
}

// Server states, as Docker names them.
const (
	StateCreated    = "created"
	StateRunning    = "running"
	StatePaused     = "paused"
	StateRestarting = "restarting"
	StateRemoving   = "removing"
	StateExited     = "exited"
	StateDead       = "dead"
)

// Usage is a server's current CPU and memory use, in percent of the
// Machine's limits: CPU 50 is half of Machine.CPU (a quarter core for a
// 500m limit), Memory 25 is a quarter of Machine.Memory. Measurement noise
// can put CPU slightly above 100.
type Usage struct {
	CPU, Memory float64
}

// Driver runs one server per Machine. Implementations are safe for
// concurrent use. Every error can be classified with IsPermanent.
type Driver interface {
	// Name of the driver, as ForName knows it.
	Name() string
	// Create creates and starts the server for m, or returns the existing
	// one, starting it again when it is stopped (idempotent). It never
	// touches a server it did not create for m.UID: a server holding m's
	// name without being m's is reported with a *NotOwnedError.
	Create(ctx context.Context, m Machine) (Server, error)
	// Delete removes m's server; no error when there is none. Only m.UID
	// is needed.
	Delete(ctx context.Context, m Machine) error
	// Get returns m's server and whether it exists. Only m.UID is needed.
	Get(ctx context.Context, m Machine) (Server, bool, error)
	// Usage returns the current CPU and memory use of m's server, in
	// percent of m.CPU and m.Memory; zero for a server that is not running,
	// ErrServerNotFound when there is no server.
	Usage(ctx context.Context, m Machine) (Usage, error)
	// ListOwned returns every server the driver created, for any Machine, with
	// the identity of the Machine it was created for: what a controller
	// needs to find the servers whose VirtualMachine is gone. Servers the
	// driver did not create are not listed.
	ListOwned(ctx context.Context) ([]OwnedServer, error)
	// Capacity is the CPU and memory of the host the servers run on: no
	// Machine can be given more, and Create refuses one that asks for
	// more with ErrInvalidMachine.
	Capacity(ctx context.Context) (Capacity, error)
}

// OwnedServer is a server a driver created, and whose it is.
type OwnedServer struct {
	// ID and Name of the server.
	ID, Name string
	// Owner is the Machine it was created for: Namespace, Name and UID
	// (the other fields are not set).
	Owner Machine
}

// Capacity is what a host can give a server at most.
type Capacity struct {
	CPU, Memory resource.Quantity
}

// Exceeds reports, in one sentence per resource, what of m asks for more
// than c holds; "" when nothing does. The sentence does not say how much c
// holds: it is written into the status of a tenant's VirtualMachine, which
// is not told the size of the host.
func (c Capacity) Exceeds(m Machine) string {
	var over []string
	if !c.CPU.IsZero() && m.CPU.Cmp(c.CPU) > 0 {
		over = append(over, "cpu "+m.CPU.String())
	}
	if !c.Memory.IsZero() && m.Memory.Cmp(c.Memory) > 0 {
		over = append(over, "memory "+m.Memory.String())
	}
	switch len(over) {
	case 0:
		return ""
	case 1:
		return over[0] + " is more than a server can be given here"
	default:
		return strings.Join(over, " and ") + " are more than a server can be given here"
	}
}

// ValidateImage checks that image is a reference to a repository with a
// tag or a digest ([registry[:port]/]path:tag, path@sha256:..., or both):
// a bare name, which the Docker daemon would also match against the IDs of
// its images by prefix (so that "c" runs image c8d36865e66a), is refused,
// and so is anything that is not a reference.
func ValidateImage(image string) error {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return fmt.Errorf("image %q is not a valid reference: %v", image, err)
	}
	_, tagged := ref.(reference.Tagged)
	_, digested := ref.(reference.Digested)
	if !tagged && !digested {
		return fmt.Errorf("image %q names no tag or digest; give one, e.g. %s:latest", image, image)
	}
	return nil
}

// Labels put on every container the docker driver creates. The UID label
// is how a Machine's container is found.
const (
	LabelNamespace = "cloudnative.kubeharness.dev/namespace"
	LabelName      = "cloudnative.kubeharness.dev/name"
	LabelUID       = "cloudnative.kubeharness.dev/uid"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "kubeharness-vm-controller"
)

// ContainerName returns the server name for a Machine:
// "<namespace>_<name>" made to fit Docker's name rule
// [a-zA-Z0-9][a-zA-Z0-9_.-]+, every other character of either part (and an
// '_' in it) becoming '-'. A Kubernetes name holds no '_' (namespaces are
// DNS labels, VirtualMachine names DNS subdomains), so the separator is
// the only '_' and no two VirtualMachines share a server name: namespace
// "a" with "b-c" and namespace "a-b" with "c" are "a_b-c" and "a-b_c".
func ContainerName(namespace, name string) string {
	var b strings.Builder
	part := func(s string) {
		for _, r := range s {
			if r < 0x80 && (isAlnum(byte(r)) || r == '.' || r == '-') {
				b.WriteRune(r)
			} else {
				b.WriteByte('-')
			}
		}
	}
	part(namespace)
	b.WriteByte('_')
	part(name)
	s := b.String()
	if !isAlnum(s[0]) {
		s = "vm" + s
	}
	return s
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Errors a controller acts on. Test with errors.Is; every one of them is
// permanent (see IsPermanent).
var (
	// ErrInvalidMachine: the Machine cannot be run as it is (empty fields,
	// a limit that is not positive or that the driver cannot honour, a
	// malformed image reference). The message lists every problem.
	ErrInvalidMachine = errors.New("invalid machine")
	// ErrImageNotFound: the image is not present locally (and pulling is
	// off or failed for good). The message names the image. Nothing changes
	// until the image is loaded or the spec changes: report it, do not
	// retry at once.
	ErrImageNotFound = errors.New("image not found")
	// ErrNotOwned: a server holds the Machine's name but was not created
	// for its UID; see NotOwnedError.
	ErrNotOwned = errors.New("server name taken by a server not owned by this machine")
	// ErrServerNotFound: Usage was asked for a Machine without a server.
	ErrServerNotFound = errors.New("server not found")
	// ErrTLS: the driver and the daemon do not trust each other's TLS
	// certificates, or disagree on whether to speak TLS. The message names
	// the daemon and the certificate files, which are the operator's
	// business, not a VirtualMachine's owner's.
	ErrTLS = errors.New("TLS between the controller and the daemon failed")
)

// NotOwnedError is returned by Create when a server named Name exists but
// does not carry the Machine's UID. The driver leaves it as it is: it is
// not started, stopped, changed or deleted.
type NotOwnedError struct {
	Machine Machine
	// Name and ID of the server found.
	Name, ID string
	// OwnerUID is the UID label the server carries when this driver
	// created it: the UID of an earlier VirtualMachine of the same name,
	// whose server a controller may delete once it knows no VirtualMachine
	// has that UID. It is empty when the server was not created by this
	// driver at all. OwnerNamespace and OwnerName are that VirtualMachine's
	// namespace and name, from the server's labels.
	OwnerUID, OwnerNamespace, OwnerName string
}

// Error names the server, its ID and its owner's UID: it is for the
// operator's log. A VirtualMachine's status says less (see the
// controller), as the owner is another object.
func (e *NotOwnedError) Error() string {
	owner := "was not created by " + ManagedBy
	if e.OwnerUID != "" {
		owner = "belongs to uid " + e.OwnerUID
	}
	return fmt.Sprintf("%s/%s: server name %q is taken by %s, which %s; it is left untouched",
		e.Machine.Namespace, e.Machine.Name, e.Name, shortID(e.ID), owner)
}

// Is makes errors.Is(err, ErrNotOwned) true.
func (e *NotOwnedError) Is(target error) bool { return target == ErrNotOwned }

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// permanentError marks an error that retrying the same call cannot cure.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: retrying the same call cannot succeed
// until something outside the driver changes (the spec, the images present,
// the daemon's configuration). Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err is permanent: ErrInvalidMachine,
// ErrImageNotFound, ErrNotOwned, ErrServerNotFound, or an error marked with
// Permanent (the docker driver marks the daemon's "invalid argument",
// "unauthorized", "forbidden" and "not implemented" answers and TLS trust
// failures). Any other non-nil error is transient: the daemon unreachable or
// overloaded, a conflict with a concurrent change, a timeout, a cancelled
// context.
//
// A controller requeues a transient error with its rate limiter's back-off,
// and a permanent one not at all (it records the error in the status and
// waits for a change of the object) or after a long, fixed delay.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	var p *permanentError
	return errors.As(err, &p) ||
		errors.Is(err, ErrInvalidMachine) ||
		errors.Is(err, ErrImageNotFound) ||
		errors.Is(err, ErrNotOwned) ||
		errors.Is(err, ErrServerNotFound)
}

// Reason returns a CamelCase reason for a status condition or an event:
// "InvalidSpec", "ImageNotFound", "NameConflict", "ServerNotFound",
// "DriverPermanentError" or "DriverError" (transient); "" for nil.
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalidMachine):
		return "InvalidSpec"
	case errors.Is(err, ErrImageNotFound):
		return "ImageNotFound"
	case errors.Is(err, ErrNotOwned):
		return "NameConflict"
	case errors.Is(err, ErrServerNotFound):
		return "ServerNotFound"
	case IsPermanent(err):
		return "DriverPermanentError"
	default:
		return "DriverError"
	}
}
