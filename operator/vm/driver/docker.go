package driver

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Docker is the Driver that runs each Machine as a Docker container,
// through the Docker Engine API. Build it with NewDocker. It is safe for
// concurrent use.
type Docker struct {
	cli *client.Client
	cfg dockerConfig

	mu       sync.Mutex
	samples  map[string]cpuSample // last CPU sample per Machine UID
	capacity *Capacity            // the daemon's, once read
}

// cpuSample is the last CPU reading Usage took of a container.
type cpuSample struct {
	containerID string
	cpu         container.CPUStats
}

var _ Driver = (*Docker)(nil)

// NewDocker returns a docker driver configured by opts and the environment
// (see DockerOptions). It loads the TLS material at once, so a missing or
// bad certificate file is an error here that names the file and the daemon,
// but it does not contact the daemon: Ping does.
func NewDocker(opts DockerOptions) (*Docker, error) {
	cfg, err := opts.resolve(os.Getenv)
	if err != nil {
		return nil, err
	}
	copts, err := cfg.clientOptions()
	if err != nil {
		return nil, err
	}
	cli, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker driver: client for %s: %w", cfg.host, err)
	}
	return &Docker{cli: cli, cfg: cfg, samples: map[string]cpuSample{}}, nil
}

// Name returns "docker".
func (d *Docker) Name() string { return DockerDriverName }

// Host returns the daemon's address.
func (d *Docker) Host() string { return d.cfg.host }

// Close releases the client's idle connections.
func (d *Docker) Close() error { return d.cli.Close() }

// Ping checks that the daemon answers, negotiating the API version unless
// one is fixed. Its error says what is wrong: the daemon unreachable (at
// which address), or a TLS failure (which certificate, which daemon).
func (d *Docker) Ping(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return d.explain(err, "ping")
	}
	return nil
}

// Create implements Driver.
func (d *Docker) Create(ctx context.Context, m Machine) (Server, error) {
	if err := m.Validate(); err != nil {
		return Server{}, err
	}
	nanoCPUs, memory, err := limits(m)
	if err != nil {
		return Server{}, err
	}
	capacity, err := d.Capacity(ctx)
	if err != nil {
		return Server{}, err
	}
	if over := capacity.Exceeds(m); over != "" {
		return Server{}, invalidMachine(m, over)
	}

	id, state, found, err := d.find(ctx, m)
	if err != nil {
		return Server{}, err
	}
	if found && state == container.StateDead {
		// A container Docker failed to remove cannot be started again.
		if err := d.remove(ctx, id); err != nil {
			return Server{}, err
		}
		found = false
	}
	if !found {
		if id, err = d.create(ctx, m, nanoCPUs, memory); err != nil {
			return Server{}, err
		}
	}
	return d.ensureRunning(ctx, m, id)
}

// create creates m's container and returns its ID. When the name is taken,
// the container holding it is m's (created concurrently) or a
// *NotOwnedError.
func (d *Docker) create(ctx context.Context, m Machine, nanoCPUs, memory int64) (string, error) {
	if err := d.ensureImage(ctx, m); err != nil {
		return "", err
	}
	name := ContainerName(m.Namespace, m.Name)
	pids := d.cfg.pidsLimit
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image: m.Image,
			Labels: map[string]string{
				LabelNamespace: m.Namespace,
				LabelName:      m.Name,
				LabelUID:       m.UID,
				LabelManagedBy: ManagedBy,
			},
		},
		HostConfig: &container.HostConfig{
			Resources: container.Resources{
				NanoCPUs: nanoCPUs,
				Memory:   memory,
				// No swap on top of the memory limit (Docker's default
				// would double it where swap is accounted).
				MemorySwap: memory,
				// A fork bomb in one server must not take the host's
				// process table from the others.
				PidsLimit: &pids,
			},
			// The controller decides whether a stopped server runs again.
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			// A tenant's workload gets the few capabilities a system
			// running as root inside needs, not Docker's default set
			// (no raw sockets, mknod, chroot, setfcap or audit writes),
			// and can never gain more through a setuid binary.
			CapDrop:     []string{"ALL"},
			CapAdd:      slices.Clone(ServerCapabilities),
			SecurityOpt: []string{"no-new-privileges"},
		},
	})
	if err == nil {
		return res.ID, nil
	}
	if !cerrdefs.IsConflict(err) {
		return "", d.explain(err, "create container %s for %s", name, m)
	}
	// The name is taken: by m's own container (a concurrent Create), by a
	// predecessor's, or by someone else's. A container being created has
	// its name reserved before it can be inspected, hence a few tries.
	var ins client.ContainerInspectResult
	for try := 0; ; try++ {
		var ierr error
		ins, ierr = d.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if ierr == nil {
			break
		}
		if !cerrdefs.IsNotFound(ierr) {
			return "", d.explain(ierr, "inspect container %s", name)
		}
		if try == 10 {
			// Still being created, or removed in the meantime: a later
			// attempt will do.
			return "", d.explain(err, "create container %s for %s", name, m)
		}
		select {
		case <-ctx.Done():
			return "", d.explain(ctx.Err(), "create container %s for %s", name, m)
		case <-time.After(100 * time.Millisecond):
		}
	}
	labels := map[string]string{}
	if ins.Container.Config != nil {
		labels = ins.Container.Config.Labels
	}
	ours := labels[LabelManagedBy] == ManagedBy
	if ours && labels[LabelUID] == m.UID {
		return ins.Container.ID, nil
	}
	e := &NotOwnedError{Machine: m, Name: name, ID: ins.Container.ID}
	if ours {
		e.OwnerUID, e.OwnerNamespace, e.OwnerName = labels[LabelUID], labels[LabelNamespace], labels[LabelName]
	}
	return "", e
}

// ServerCapabilities are the only capabilities a container of the docker
// driver has: enough for an init system and services that start as root
// and drop to their own users, and nothing of the network's raw side or of
// device nodes.
var ServerCapabilities = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_SETGID", "CAP_SETUID"}

// ensureImage checks that m.Image is present, pulling it when allowed, and
// that the image the daemon finds for it carries the reference: the daemon
// also matches a name against the IDs of its images by prefix, and a
// tenant's Machine runs only images named for it. Its errors say nothing of
// the daemon (its address): they end up in the tenant's status.
func (d *Docker) ensureImage(ctx context.Context, m Machine) error {
	ref, err := reference.ParseNormalizedNamed(m.Image)
	if err != nil {
		return invalidMachine(m, fmt.Sprintf("image %q: %v", m.Image, err))
	}
	img, err := d.cli.ImageInspect(ctx, m.Image)
	if err == nil {
		return imageNamed(m, ref, img.RepoTags, img.RepoDigests)
	}
	if !cerrdefs.IsNotFound(err) {
		return d.explain(err, "inspect image %s", m.Image)
	}
	if !d.cfg.pull {
		return fmt.Errorf("%w: %s is not present (machine %s/%s; pulling is off)",
			ErrImageNotFound, m.Image, m.Namespace, m.Name)
	}
	resp, err := d.cli.ImagePull(ctx, m.Image, client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(ctx)
		_ = resp.Close()
	}
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err) || cerrdefs.IsUnauthorized(err) || cerrdefs.IsPermissionDenied(err):
		return fmt.Errorf("%w: %s is not present and cannot be pulled (machine %s/%s): %v",
			ErrImageNotFound, m.Image, m.Namespace, m.Name, err)
	default:
		return d.explain(err, "pull image %s", m.Image)
	}
}

// imageNamed checks that an image whose tags and digests the daemon lists
// as repoTags and repoDigests is the one ref names: a tagged ref must be
// among its tags, a digested one among its digests. Anything else was
// matched some other way (by ID prefix) and is reported as not present.
func imageNamed(m Machine, ref reference.Named, repoTags, repoDigests []string) error {
	want, have := "", repoTags
	switch r := ref.(type) {
	case reference.Canonical:
		want, have = reference.FamiliarName(r)+"@"+r.Digest().String(), repoDigests
	case reference.NamedTagged:
		want = reference.FamiliarString(r)
	default:
		return invalidMachine(m, fmt.Sprintf("image %q names no tag or digest", m.Image))
	}
	for _, h := range have {
		if n, err := reference.ParseNormalizedNamed(h); err == nil && reference.FamiliarString(n) == want {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not present (machine %s/%s; no image is tagged so)",
		ErrImageNotFound, m.Image, m.Namespace, m.Name)
}

// ensureRunning starts (or unpauses) m's container id when needed and
// returns it as a Server.
func (d *Docker) ensureRunning(ctx context.Context, m Machine, id string) (Server, error) {
	s, err := d.inspect(ctx, m, id)
	if err != nil {
		return Server{}, err
	}
	switch s.State {
	case StateRunning, StateRestarting:
		return s, nil
	case StatePaused:
		if _, err := d.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{}); err != nil {
			return Server{}, d.explain(err, "unpause container %s of %s", s.Name, m)
		}
	case StateRemoving:
		return Server{}, fmt.Errorf("container %s of %s is being removed", s.Name, m)
	default: // created, exited
		if _, err := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			return Server{}, d.explain(err, "start container %s of %s", s.Name, m)
		}
	}
	return d.inspect(ctx, m, id)
}

// inspect returns container id, m's, as a Server.
func (d *Docker) inspect(ctx context.Context, m Machine, id string) (Server, error) {
	res, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Server{}, d.explain(err, "inspect container %s", shortID(id))
	}
	c := res.Container
	s := Server{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/")}
	if c.State != nil {
		s.State, s.Running = string(c.State.Status), c.State.Running
	}
	if c.Config != nil {
		s.Image = c.Config.Image
	}
	if c.HostConfig != nil {
		s.CPU, s.Memory = reportedLimits(m, c.HostConfig.NanoCPUs, c.HostConfig.Memory)
	}
	return s, nil
}

// find returns the ID and state of m's container: the one labelled with
// m.UID (and managed by this controller), the running one or else the
// newest if there are several.
func (d *Docker) find(ctx context.Context, m Machine) (id string, state container.ContainerState, found bool, err error) {
	all, err := d.list(ctx, m)
	if err != nil || len(all) == 0 {
		return "", "", false, err
	}
	best := slices.MaxFunc(all, func(a, b container.Summary) int {
		ar, br := a.State == container.StateRunning, b.State == container.StateRunning
		switch {
		case ar != br && ar:
			return 1
		case ar != br:
			return -1
		}
		return cmp.Compare(a.Created, b.Created)
	})
	return best.ID, best.State, true, nil
}

// list returns every container labelled with m.UID and managed by this
// controller, stopped ones included.
func (d *Docker) list(ctx context.Context, m Machine) ([]container.Summary, error) {
	res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelUID+"="+m.UID, LabelManagedBy+"="+ManagedBy),
	})
	if err != nil {
		return nil, d.explain(err, "list containers of %s", m)
	}
	return res.Items, nil
}

// remove force-removes container id (with its anonymous volumes); one
// already gone is no error.
func (d *Docker) remove(ctx context.Context, id string) error {
	_, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		// "removal already in progress" is a conflict, hence transient.
		return d.explain(err, "remove container %s", shortID(id))
	}
	return nil
}

// Delete implements Driver: it force-removes every container labelled with
// m.UID.
func (d *Docker) Delete(ctx context.Context, m Machine) error {
	if err := m.validateRef(); err != nil {
		return err
	}
	all, err := d.list(ctx, m)
	if err != nil {
		return err
	}
	for _, c := range all {
		if err := d.remove(ctx, c.ID); err != nil {
			return err
		}
	}
	d.forget(m.UID)
	return nil
}

// Get implements Driver.
func (d *Docker) Get(ctx context.Context, m Machine) (Server, bool, error) {
	if err := m.validateRef(); err != nil {
		return Server{}, false, err
	}
	id, _, found, err := d.find(ctx, m)
	if err != nil {
		return Server{}, false, err
	}
	if !found {
		d.forget(m.UID)
		return Server{}, false, nil
	}
	s, err := d.inspect(ctx, m, id)
	if cerrdefs.IsNotFound(err) {
		// Removed between the list and the inspect.
		d.forget(m.UID)
		return Server{}, false, nil
	}
	return s, err == nil, err
}

// ListOwned implements Driver: every container labelled managed-by this
// driver, stopped ones included.
func (d *Docker) ListOwned(ctx context.Context) ([]OwnedServer, error) {
	res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelManagedBy+"="+ManagedBy),
	})
	if err != nil {
		return nil, d.explain(err, "list containers")
	}
	out := make([]OwnedServer, 0, len(res.Items))
	for _, c := range res.Items {
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, OwnedServer{ID: c.ID, Name: name, Owner: Machine{
			Namespace: c.Labels[LabelNamespace], Name: c.Labels[LabelName], UID: c.Labels[LabelUID],
		}})
	}
	return out, nil
}

// Capacity implements Driver: the CPUs and memory the daemon reports
// (docker info's NCPU and MemTotal), read once.
func (d *Docker) Capacity(ctx context.Context) (Capacity, error) {
	d.mu.Lock()
	c := d.capacity
	d.mu.Unlock()
	if c != nil {
		return *c, nil
	}
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return Capacity{}, d.explain(err, "read the daemon's capacity")
	}
	if res.Info.NCPU <= 0 || res.Info.MemTotal <= 0 {
		return Capacity{}, fmt.Errorf("docker driver: the daemon at %s reports %d CPUs and %d bytes of memory", d.cfg.host, res.Info.NCPU, res.Info.MemTotal)
	}
	c = &Capacity{
		CPU:    *resource.NewQuantity(int64(res.Info.NCPU), resource.DecimalSI),
		Memory: *resource.NewQuantity(res.Info.MemTotal, resource.BinarySI),
	}
	d.mu.Lock()
	d.capacity = c
	d.mu.Unlock()
	return *c, nil
}

// Usage implements Driver; see the package documentation for the formulas
// and the first call.
func (d *Docker) Usage(ctx context.Context, m Machine) (Usage, error) {
	if err := m.Validate(); err != nil {
		return Usage{}, err
	}
	id, state, found, err := d.find(ctx, m)
	if err != nil {
		return Usage{}, err
	}
	if !found {
		d.forget(m.UID)
		return Usage{}, fmt.Errorf("%w: no container of %s", ErrServerNotFound, m)
	}
	if state != container.StateRunning {
		d.forget(m.UID)
		return Usage{}, nil
	}

	cur, err := d.stats(ctx, id)
	if err != nil {
		return Usage{}, err
	}
	limitCores := cores(m.CPU)
	// The previous sample: the daemon's when it took two (a daemon without
	// one-shot stats does), else the one kept from the last call.
	cpu, ok := cpuPercentOfLimit(cur.PreCPUStats, cur.CPUStats, limitCores)
	if !ok {
		d.mu.Lock()
		prev, seen := d.samples[m.UID]
		d.mu.Unlock()
		if seen && prev.containerID == id {
			cpu, ok = cpuPercentOfLimit(prev.cpu, cur.CPUStats, limitCores)
		}
	}
	if !ok {
		// First call (or too soon after the last one): a second sample.
		select {
		case <-ctx.Done():
			return Usage{}, ctx.Err()
		case <-time.After(d.cfg.interval):
		}
		first := cur
		if cur, err = d.stats(ctx, id); err != nil {
			return Usage{}, err
		}
		cpu, _ = cpuPercentOfLimit(first.CPUStats, cur.CPUStats, limitCores)
	}
	d.mu.Lock()
	d.samples[m.UID] = cpuSample{containerID: id, cpu: cur.CPUStats}
	d.mu.Unlock()
	return Usage{CPU: cpu, Memory: memoryPercentOfLimit(cur.MemoryStats, m.Memory.Value())}, nil
}

// stats takes one stats sample of container id, without waiting for a
// second one (one-shot).
func (d *Docker) stats(ctx context.Context, id string) (container.StatsResponse, error) {
	res, err := d.cli.ContainerStats(ctx, id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		return container.StatsResponse{}, d.explain(err, "stats of container %s", shortID(id))
	}
	defer res.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&s); err != nil {
		return container.StatsResponse{}, fmt.Errorf("docker driver: stats of container %s: %w", shortID(id), err)
	}
	return s, nil
}

func (d *Docker) forget(uid string) {
	d.mu.Lock()
	delete(d.samples, uid)
	d.mu.Unlock()
}

// explain wraps an error of the Docker client with what was being done
// (format, args) and classifies it: the daemon's "invalid argument",
// "unauthorized", "forbidden" and "not implemented" answers and TLS trust
// failures are permanent, the rest transient. TLS failures are rewritten to
// name the daemon and the certificate files.
func (d *Docker) explain(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("docker driver: %s: %w", what, err)
	}
	if tlsErr := d.explainTLS(err); tlsErr != nil {
		return Permanent(fmt.Errorf("docker driver: %s: %w: %w", what, ErrTLS, tlsErr))
	}
	wrapped := fmt.Errorf("docker driver: %s (daemon %s): %w", what, d.cfg.host, err)
	if cerrdefs.IsInvalidArgument(err) || cerrdefs.IsUnauthorized(err) ||
		cerrdefs.IsPermissionDenied(err) || cerrdefs.IsNotImplemented(err) {
		return Permanent(wrapped)
	}
	return wrapped
}

// explainTLS returns an error saying what went wrong in the TLS handshake
// with the daemon, nil when err is not a TLS failure.
func (d *Docker) explainTLS(err error) error {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
	)
	c := d.cfg
	switch {
	case errors.As(err, &unknownAuthority):
		return fmt.Errorf("the certificate of the daemon at %s is not signed by the CA in %s (TLS verification on): %w", c.host, c.caFile(), err)
	case errors.As(err, &hostname):
		return fmt.Errorf("the certificate of the daemon at %s (signed by the CA in %s) is not valid for that address: %w", c.host, c.caFile(), err)
	case errors.As(err, &invalid):
		return fmt.Errorf("the certificate of the daemon at %s is not valid: %w", c.host, err)
	case c.tls != TLSOff && strings.Contains(err.Error(), "remote error: tls:"):
		return fmt.Errorf("the daemon at %s refused the TLS handshake; is the client certificate %s (key %s) signed by a CA it trusts? %w", c.host, c.certFile(), c.keyFile(), err)
	case c.tls != TLSOff && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("the daemon at %s does not speak TLS, but TLS is on (certificates from %s): %w", c.host, c.certPath, err)
	case c.tls == TLSOff && (strings.Contains(err.Error(), "malformed HTTP response") ||
		strings.Contains(err.Error(), "Client sent an HTTP request to an HTTPS server")):
		return fmt.Errorf("the daemon at %s speaks TLS, but TLS is off (set %s and %s): %w", c.host, EnvDockerCertPath, EnvDockerTLSVerify, err)
	}
	return nil
}
