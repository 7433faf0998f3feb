package process

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Command is a process to start: what runs, and how. The zero value of
// each optional field is what a harness process usually wants.
type Command struct {
	// Path is the executable; Args are its arguments, without the
	// program's name.
	Path string
	Args []string
	// Name names the process in errors; empty means Path's base name.
	Name string
	// Out receives the process's standard output and standard error; nil
	// discards them.
	Out io.Writer
	// Stdin is the process's standard input; nil means the null device.
	Stdin io.Reader
	// Dir is the process's working directory; empty means this process's.
	Dir string
	// Env is added to this process's environment for it.
	Env []string
	// Mark, when set (NAME=value), is added to its environment too, where
	// whatever it starts inherits it: Owned and StopOwned recognize the
	// process, and its descendants, by it.
	Mark string
	// ExtraFiles are passed on as the process's file descriptors 3 and up.
	ExtraFiles []*os.File
	// DeathSignal is the signal the process (on Linux) or its whole
	// process group (through the watchdog, elsewhere on Unix) receives
	// when this one dies; zero means SIGKILL. SIGTERM lets it end as on
	// Stop (a controller releases its leader election lease). Windows
	// sends nothing.
	DeathSignal syscall.Signal
	// Detached starts the process in a session of its own, which outlives
	// this process and the terminal it runs in (no DeathSignal): a daemon,
	// such as the supervisor of an environment that keeps running once the
	// command that started it has returned. Stop and Kill reach its
	// process group all the same.
	Detached bool
}

// deathSignal is the signal the process gets when this one dies.
func deathSignal(c Command) syscall.Signal {
	if c.DeathSignal == 0 {
		return syscall.SIGKILL
	}
	return c.DeathSignal
}

func (c Command) name() string {
	if c.Name != "" {
		return c.Name
	}
	return filepath.Base(c.Path)
}

// Process is a started Command, until it has exited and been reaped.
type Process struct {
	cmd  Command
	exec *exec.Cmd
	// done is closed once the process has exited and been reaped, after
	// err is set to what exec.Cmd.Wait returned.
	done chan struct{}
	err  error
	// watchdog, when set, ends the process's group when this process dies
	// (watchdog_unix.go); it is ended once the process has been reaped.
	watchdog *watchdog
	// pgid is the process group's id: the process's pid, or its
	// watchdog's, which leads the group.
	pgid int
}

// Start starts the command in a process group of its own (Pgid) or,
// Detached, in a session of its own, and reaps it once it exits. Where no
// parent-death signal ends it with this process, a watchdog does, which
// leads the group (see the package's documentation).
func (c Command) Start() (*Process, error) {
	c.Args, c.Env, c.ExtraFiles = slices.Clone(c.Args), slices.Clone(c.Env), slices.Clone(c.ExtraFiles)
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = c.Out, c.Out, c.Stdin
	cmd.Dir, cmd.ExtraFiles = c.Dir, c.ExtraFiles
	if len(c.Env) > 0 || c.Mark != "" {
		cmd.Env = append(os.Environ(), c.Env...)
		if c.Mark != "" {
			cmd.Env = append(cmd.Env, c.Mark)
		}
	}
	cmd.SysProcAttr = sysProcAttr(c)
	p := &Process{cmd: c, exec: cmd, done: make(chan struct{})}
	if watched(c) {
		// The watchdog first, leading a group the process then joins: so
		// that no moment of the process's life is unguarded.
		wd, err := startWatchdog(deathSignal(c))
		if err != nil {
			return nil, fmt.Errorf("starting %s: %w", c.name(), err)
		}
		p.watchdog = wd
		wd.join(cmd.SysProcAttr)
	}
	if err := cmd.Start(); err != nil {
		p.watchdog.end()
		return nil, fmt.Errorf("starting %s: %w", c.name(), err)
	}
	p.pgid = cmd.Process.Pid
	if p.watchdog != nil {
		p.pgid = p.watchdog.pgid()
	}
	go func() {
		p.err = cmd.Wait()
		p.watchdog.end()
		close(p.done)
	}()
	return p, nil
}

// Command returns what the process was started as: Start it again for a
// process like it.
func (p *Process) Command() Command {
	c := p.cmd
	c.Args, c.Env, c.ExtraFiles = slices.Clone(c.Args), slices.Clone(c.Env), slices.Clone(c.ExtraFiles)
	return c
}

// Name is the name the process goes by in errors (Command.Name).
func (p *Process) Name() string { return p.cmd.name() }

// Pid is the process's id. It is its process group's id too (Pgid), but
// where a watchdog leads the group.
func (p *Process) Pid() int { return p.exec.Process.Pid }

// Pgid is the id of the process's group: Pid on Linux and Windows, its
// watchdog's pid where one leads the group (the other Unix systems, and
// Linux with EnvWatchdog).
func (p *Process) Pgid() int { return p.pgid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is nil while the process runs and after it exited with status 0;
// otherwise it says how it ended (an *exec.ExitError, wrapped).
func (p *Process) Err() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	if p.err == nil {
		return nil
	}
	return fmt.Errorf("%s (%s) exited: %w", p.Name(), p.cmd.Path, p.err)
}

// Wait waits until the process has exited and returns Err.
func (p *Process) Wait() error {
	<-p.done
	return p.Err()
}

// State is how the process ended; nil while it runs.
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.done:
		return p.exec.ProcessState
	default:
		return nil
	}
}

// Signal sends sig to the process alone (not its group), as a fault does:
// SIGSTOP pauses it, SIGCONT continues it.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.exec.Process.Signal(sig); err != nil {
		return fmt.Errorf("sending %v to %s (pid %d): %w", sig, p.Name(), p.Pid(), err)
	}
	return nil
}

// Stop ends the process and returns once it has been reaped: SIGTERM to
// its process group, and SIGCONT, so that a paused process acts on it;
// then up to grace for the process to exit, and SIGKILL to the group,
// which ends what else still runs in it too. It returns an error when the
// process had to be killed; how the process exited is Err's. A process
// that has exited already is left as it is. On Windows, which has no
// SIGTERM, the process is ended at once (TerminateProcess).
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.signalGroup(syscall.SIGTERM)
	p.continueGroup()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		p.signalGroup(syscall.SIGKILL)
		return nil
	case <-timer.C:
		p.signalGroup(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM and was killed", p.Name(), p.Pid(), grace)
	}
}

// Kill sends SIGKILL to the process's group (on Windows, ends the process)
// and returns once the process has been reaped: nothing it held in memory
// survives. A process that has exited already is left as it is.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.killGroup(syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (process group %d): %w", p.Name(), p.Pgid(), err)
	}
	<-p.done
	return nil
}

// SignalGroup sends sig to the process's group, unless the process has
// been reaped: the group outlives the process while anything else runs in
// it, and its id is not reused before both are gone. Kill is SignalGroup
// with SIGKILL and a wait; sending to several processes first and waiting
// after ends them all in the time of the slowest. On Windows SIGKILL and
// SIGTERM end the process, and other signals are refused
// (errors.ErrUnsupported): they need a Unix system.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.killGroup(sig); err != nil {
		return fmt.Errorf("sending %v to %s (process group %d): %w", sig, p.Name(), p.Pgid(), err)
	}
	return nil
}

// signalGroup sends sig to the process's group. The group outlives the
// process while anything else runs in it, and its id is not reused before
// both are gone.
func (p *Process) signalGroup(sig syscall.Signal) {
	_ = p.killGroup(sig)
}
