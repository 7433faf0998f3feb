package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// The methods below break the control plane on purpose, the way a node
// breaks: a process killed, frozen or restarted. They are not safe to
// call concurrently with each other or with Stop.

// component returns the component named comp, once it started.
func (c *ControlPlane) component(comp Component) (component, error) {
	var names []string
	for _, k := range c.components() {
		if k.process() == nil {
			continue
		}
		if k.name() == comp {
			return k, nil
		}
		names = append(names, string(k.name()))
	}
	return nil, fmt.Errorf("%q does not run in this control plane, which runs %s", comp, cmp.Or(strings.Join(names, ", "), "nothing"))
}

// Exited names the control plane's processes that no longer run (killed
// and not restarted, or crashed), with how each ended; nil when all run.
// A suite that lets specs break a control plane in turn checks it before
// handing the plane to the next.
func (c *ControlPlane) Exited() error {
	var errs []error
	for _, k := range c.components() {
		p := k.process()
		if p == nil {
			continue
		}
		if st := p.State(); st != nil {
			errs = append(errs, fmt.Errorf("%s (pid %d) is not running: %v", k.name(), p.Pid(), st))
		}
	}
	return errors.Join(errs...)
}

// Kill sends SIGKILL to comp and returns once it is gone: nothing it held
// in memory survives, what it wrote (etcd's data) does.
func (c *ControlPlane) Kill(comp Component) error {
	k, err := c.component(comp)
	if err != nil {
		return err
	}
	p := k.process()
	if st := p.State(); st != nil {
		return fmt.Errorf("%s is not running (%v)", comp, st)
	}
	return p.Kill()
}

// Pause freezes comp with SIGSTOP: its connections stay open and nothing
// answers on them, as with a process that hangs. It needs a Unix system.
func (c *ControlPlane) Pause(comp Component) error {
	return c.signal(comp, sigStop)
}

// Resume continues comp after Pause with SIGCONT.
func (c *ControlPlane) Resume(comp Component) error {
	return c.signal(comp, sigCont)
}

func (c *ControlPlane) signal(comp Component, sig syscall.Signal) error {
	k, err := c.component(comp)
	if err != nil {
		return err
	}
	return k.process().Signal(sig)
}

// RestartGrace is how long Restart lets a process stop after SIGTERM
// before it kills it, as a kubelet does after a Pod's grace period. A tuned
// API server exits about 2 s after SIGTERM even with clients watching
// (--shutdown-send-retry-after); controller-runtime's envtest API server
// drains watches for a minute, so its restart would be SIGTERM and, 5 s
// later, SIGKILL.
const RestartGrace = 5 * time.Second

// Restart stops comp if it runs (SIGTERM, SIGKILL after RestartGrace, as a
// supervisor would), starts it again with the same flags, ports and data,
// and returns once it is ready again: etcd's /health, the API server's
// readiness. The controller manager's own informers resync in the
// background.
func (c *ControlPlane) Restart(ctx context.Context, comp Component) error {
	k, err := c.component(comp)
	if err != nil {
		return err
	}
	if err := k.restart(); err != nil {
		return fmt.Errorf("starting %s again: %w", comp, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	if err := k.ready(ctx); err != nil {
		return fmt.Errorf("%s did not become ready after its restart: %w", comp, err)
	}
	return nil
}
