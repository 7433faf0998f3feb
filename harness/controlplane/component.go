package controlplane

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

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

// The binaries a control plane runs from Options.BinaryDir, by file name.
const (
	etcdBinary              = "etcd"
	apiServerBinary         = "kube-apiserver"
	apiServerTestBinary     = "kube-apiserver-test"
	controllerManagerBinary = "kube-controller-manager"
)

// component is one process of a tuned control plane, with its flags and
// what tells that it serves: etcd.go, apiserver.go and
// controllermanager.go each hold one. ControlPlane configures them,
// starts them in order (run), stops them in reverse (Stop) and breaks
// them on purpose (faults.go); a new component is a new file and a field
// of ControlPlane listed in components.
type component interface {
	// name is what Kill, Pause and Restart call the component.
	name() Component
	// start runs the component's process with its flags.
	start() error
	// ready returns once the component serves (etcd's health, the API
	// server's readiness), or when ctx ends.
	ready(ctx context.Context) error
	// stopGrace is how long Stop lets the component end after SIGTERM,
	// once the others are gone; zero has it killed with them at once.
	stopGrace() time.Duration
	// process is the component's process; nil before it started.
	process() *process.Process
	// restart stops the process (SIGTERM, SIGKILL after RestartGrace, as
	// a supervisor would) and starts it again with the same command line.
	restart() error
}

// proc is the process of a component: starting, restarting and stopping
// it is the same for every component, which embeds it.
type proc struct{ p *process.Process }

func (r *proc) process() *process.Process { return r.p }

// run starts cmd as the component's process.
func (r *proc) run(cmd process.Command) error {
	p, err := cmd.Start()
	if err != nil {
		return err
	}
	r.p = p
	return nil
}

func (r *proc) restart() error {
	// A process killed after the grace period is a restart too.
	_ = r.p.Stop(RestartGrace)
	return r.run(r.p.Command())
}

// command is how a tuned control plane runs a process (harness/process):
// in a process group of its own, so that Ctrl-C reaches the harness, which
// stops the processes in order; killed when the harness dies, however it
// dies; its output to out.
func command(out io.Writer, path string, args ...string) process.Command {
	return process.Command{Path: path, Args: args, Out: out}
}

// stopComponents stops comps, given in start order: SIGKILL to the process
// groups of all those without a stop grace at once, latest first, and then
// the others one by one, latest first, each with its grace. It returns once
// each process has been reaped.
func stopComponents(comps []component) error {
	var errs []error
	var killed []*process.Process
	for i := len(comps) - 1; i >= 0; i-- {
		p := comps[i].process()
		if p == nil || comps[i].stopGrace() > 0 {
			continue
		}
		if err := p.SignalGroup(syscall.SIGKILL); err != nil {
			errs = append(errs, err)
		}
		killed = append(killed, p)
	}
	for _, p := range killed {
		<-p.Done()
	}
	for i := len(comps) - 1; i >= 0; i-- {
		if p := comps[i].process(); p != nil && comps[i].stopGrace() > 0 {
			errs = append(errs, p.Stop(comps[i].stopGrace()))
		}
	}
	return errors.Join(errs...)
}
