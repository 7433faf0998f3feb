package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/process"
)

// Component names one of the control plane's processes, for the methods
// that break the plane on purpose (Kill, Pause, Restart): harness/faults
// breaks what is between clients and the API server, these the processes.
type Component string

const (
	Etcd              Component = "etcd"
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
)

// The methods below break the control plane on purpose, the way a node
// breaks: a process killed, frozen or restarted. They need a tuned control
// plane (the harness runs the processes) and are not safe to call
// concurrently with each other or with Stop.

func (c *ControlPlane) component(comp Component) (*process.Process, error) {
	if c.stock != nil {
		return nil, fmt.Errorf("%s: faults need the tuned control plane; the stock one runs its processes itself", comp)
	}
	var p *process.Process
	switch comp {
	case Etcd:
		p = c.etcd
	case APIServer:
		p = c.api
	case ControllerManager:
		p = c.kcm
	default:
		return nil, fmt.Errorf("%q is not a control-plane component: use %s, %s or %s", comp, Etcd, APIServer, ControllerManager)
	}
	if p == nil {
		return nil, fmt.Errorf("%s does not run in this control plane", comp)
	}
	return p, nil
}

// Exited names the control plane's processes that no longer run (killed
// and not restarted, or crashed), with how each ended; nil when all run.
// A suite that lets specs break a control plane in turn checks it before
// handing the plane to the next.
func (c *ControlPlane) Exited() error {
	if c.stock != nil {
		return nil
	}
	var errs []error
	for _, comp := range []Component{Etcd, APIServer, ControllerManager} {
		p, err := c.component(comp)
		if err != nil {
			continue // not part of this control plane
		}
		if st := p.State(); st != nil {
			errs = append(errs, fmt.Errorf("%s (pid %d) is not running: %v", comp, p.Pid(), st))
		}
	}
	return errors.Join(errs...)
}

// Kill sends SIGKILL to comp and returns once it is gone: nothing it held
// in memory survives, what it wrote (etcd's data) does.
func (c *ControlPlane) Kill(comp Component) error {
	p, err := c.component(comp)
	if err != nil {
		return err
	}
	if st := p.State(); st != nil {
		return fmt.Errorf("%s is not running (%v)", comp, st)
	}
	return p.Kill()
}

// Pause freezes comp with SIGSTOP: its connections stay open and nothing
// answers on them, as with a process that hangs.
func (c *ControlPlane) Pause(comp Component) error {
	return c.signal(comp, syscall.SIGSTOP)
}

// Resume continues comp after Pause with SIGCONT.
func (c *ControlPlane) Resume(comp Component) error {
	return c.signal(comp, syscall.SIGCONT)
}

func (c *ControlPlane) signal(comp Component, sig syscall.Signal) error {
	p, err := c.component(comp)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

// RestartGrace is how long Restart lets a process stop after SIGTERM
// before it kills it, as a kubelet does after a Pod's grace period. A tuned
// API server exits about 2 s after SIGTERM even with clients watching
// (--shutdown-send-retry-after); the stock one drains watches for a minute,
// so its restart is SIGTERM and, 5 s later, SIGKILL.
const RestartGrace = 5 * time.Second

// Restart stops comp if it runs (SIGTERM, SIGKILL after RestartGrace, as a
// supervisor would), starts it again with the same flags, ports and data,
// and returns once it is healthy again: etcd's /health, the API server's
// readiness. The controller manager's own informers resync in the
// background.
func (c *ControlPlane) Restart(ctx context.Context, comp Component) error {
	p, err := c.component(comp)
	if err != nil {
		return err
	}
	// A process killed after the grace period is a restart too.
	_ = p.Stop(RestartGrace)
	next, err := p.Command().Start()
	if err != nil {
		return fmt.Errorf("starting %s again: %w", comp, err)
	}
	switch comp {
	case Etcd:
		c.etcd = next
	case APIServer:
		c.api = next
	case ControllerManager:
		c.kcm = next
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	if comp == Etcd {
		if err := c.waitEtcd(ctx, next); err != nil {
			return fmt.Errorf("etcd did not become healthy after its restart: %w", err)
		}
		return nil
	}
	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	if err := next.WaitHTTP(ctx, hc, c.apiURL+c.readyPath, nil); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready after its restart: %w", err)
	}
	return nil
}

// ServingCertificate is the API server's serving certificate and key, for
// something that stands in its place on 127.0.0.1 (a fault proxy) and that
// clients should trust as they trust the API server.
func (c *ControlPlane) ServingCertificate() (tls.Certificate, error) {
	if c.dir == "" || c.stock != nil {
		return tls.Certificate{}, fmt.Errorf("the serving certificate is known for the tuned control plane only")
	}
	return tls.LoadX509KeyPair(filepath.Join(c.dir, "apiserver.crt"), filepath.Join(c.dir, "apiserver.key"))
}
