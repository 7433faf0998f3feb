package devenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// envState is .kubeharness/envtest/state.json: what `env up` started, so that
// `env down` can stop all of it even after the supervisor died. Nothing in
// it is trusted: env down signals only the processes whose environment
// carries the state directory (envMark) and removes only the fixed
// directories below the state directory (envPaths.run).
type envState struct {
	SupervisorPID   int       `json:"supervisorPID"`
	Phase           string    `json:"phase"`
	Ready           bool      `json:"ready"`
	Error           string    `json:"error,omitempty"`
	Version         string    `json:"version,omitempty"`
	Host            string    `json:"host,omitempty"`
	EtcdDataDir     string    `json:"etcdDataDir,omitempty"`
	ControlPlaneDir string    `json:"controlPlaneDir,omitempty"`
	VMDriver        string    `json:"vmDriver,omitempty"`
	Kubectl         string    `json:"kubectl,omitempty"`
	Processes       []envProc `json:"processes,omitempty"`
}

type envProc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Exe  string `json:"exe"`
	// Restarts counts how often the supervisor restarted the process
	// after it exited (the manager and the VirtualMachine controller).
	Restarts int `json:"restarts,omitempty"`
}

// setProcess records that name runs as pid (executable exe), keeping its
// restart count.
func (st *envState) setProcess(name string, pid int, exe string) {
	for i := range st.Processes {
		if st.Processes[i].Name == name {
			st.Processes[i].PID, st.Processes[i].Exe = pid, exe
			return
		}
	}
	st.Processes = append(st.Processes, envProc{Name: name, PID: pid, Exe: exe})
}

// setRestarts records name's restart count.
func (st *envState) setRestarts(name string, n int) {
	for i := range st.Processes {
		if st.Processes[i].Name == name {
			st.Processes[i].Restarts = n
		}
	}
}

// envPaths are the files of one environment's state directory
// (.kubeharness/envtest by default): state.json (what runs: the
// supervisor's pid, each process's pid and executable, restart counts, the
// phase), env.lock, the control socket control.sock, the kubeconfigs, the
// logs (env.log, manager.log, vm-controller.log), bin/kubectl, and run/,
// the one directory below it with the control plane's certificates and
// etcd's data. Down removes run/ and no other directory, and signals only
// processes whose environment carries the state directory's mark: nothing
// the state file names is trusted. Which directories may be state
// directories is statedir.go's to say.
//
// env.lock is held (flock) from the moment Up begins until the supervisor
// exits, so that one environment runs per state directory; Up hands it to
// the supervisor as its file descriptor 3. The pid in it names the holder
// in messages.
type envPaths struct{ dir string }

func (p envPaths) state() string      { return filepath.Join(p.dir, "state.json") }
func (p envPaths) kubeconfig() string { return filepath.Join(p.dir, "kubeconfig") }
func (p envPaths) log() string        { return filepath.Join(p.dir, "env.log") }
func (p envPaths) managerLog() string { return filepath.Join(p.dir, "manager.log") }
func (p envPaths) managerKubeconfig() string {
	return filepath.Join(p.dir, "manager.kubeconfig")
}
func (p envPaths) vmControllerLog() string { return filepath.Join(p.dir, "vm-controller.log") }
func (p envPaths) vmControllerKubeconfig() string {
	return filepath.Join(p.dir, "vm-controller.kubeconfig")
}

// lock is the file whose exclusive lock (flock) says an environment is
// starting or running in the state directory: env up takes it and hands
// it to the supervisor, which holds it for as long as it runs. It holds
// the holder's pid, for messages.
func (p envPaths) lock() string { return filepath.Join(p.dir, "env.lock") }

// run is the one directory the environment's files go below (the control
// plane's certificates and etcd's data): env down removes it, and no other
// directory.
func (p envPaths) run() string { return filepath.Join(p.dir, "run") }

// control is the supervisor's socket: `env restart` asks it to restart a
// component.
func (p envPaths) control() string { return filepath.Join(p.dir, "control.sock") }

// binDir holds the kubectl that env up provides (a link to the build).
func (p envPaths) binDir() string  { return filepath.Join(p.dir, "bin") }
func (p envPaths) kubectl() string { return filepath.Join(p.binDir(), "kubectl") }

// envMarkerEnv is set, to the state directory, in the environment of the
// supervisor and so of every process it starts (envMark). env down and
// status take a pid from the state file for one of theirs only when the
// process carries it (process.Owned): a state file naming another
// process's pid names nothing they signal.
const envMarkerEnv = "KUBEHARNESS_ENVTEST_STATE_DIR"

// envMark is the environment mark of the processes of state directory dir.
func envMark(dir string) string { return envMarkerEnv + "=" + dir }

// lockState takes the state directory's lock (paths.lock) without waiting
// and writes this process's pid into it. When another process holds it,
// lock is nil and holder is the pid the holder wrote.
func lockState(paths envPaths) (lock *os.File, holder int, err error) {
	// Never through a symbolic link: the lock is the state directory's own.
	f, err := os.OpenFile(paths.lock(), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("opening the state directory's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder, _ := lockHolder(paths)
			return nil, holder, nil
		}
		return nil, 0, fmt.Errorf("locking %s: %w", paths.lock(), err)
	}
	if err := writeLockHolder(f, os.Getpid()); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, 0, nil
}

// writeLockHolder records pid as the lock's holder.
func writeLockHolder(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0)
	return err
}

// lockHolder reports whether a process holds the state directory's lock,
// and the pid it wrote.
func lockHolder(paths envPaths) (pid int, held bool) {
	f, err := os.Open(paths.lock())
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
		return 0, false
	}
	data, _ := io.ReadAll(f)
	pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, true
}

// envLockFD is the supervisor's file descriptor of the lock env up took
// (exec.Cmd.ExtraFiles[0]).
const envLockFD = 3

// inheritLock takes over the lock env up passed the supervisor: it checks
// that the descriptor is the state directory's lock and held, keeps it from
// the processes the supervisor starts, and records the supervisor as its
// holder.
func inheritLock(paths envPaths) (*os.File, error) {
	var got, want syscall.Stat_t
	if syscall.Fstat(envLockFD, &got) != nil || syscall.Stat(paths.lock(), &want) != nil ||
		got.Dev != want.Dev || got.Ino != want.Ino || syscall.Flock(envLockFD, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil, fmt.Errorf("env serve holds no lock on %s: it is the supervisor `kubeharness env up` starts, not a command of its own", paths.lock())
	}
	syscall.CloseOnExec(envLockFD)
	f := os.NewFile(envLockFD, paths.lock())
	if err := writeLockHolder(f, os.Getpid()); err != nil {
		return nil, err
	}
	return f, nil
}

func readState(paths envPaths) (*envState, error) {
	data, err := os.ReadFile(paths.state())
	if err != nil {
		return nil, err
	}
	st := &envState{}
	return st, json.Unmarshal(data, st)
}

// writeState replaces the state file with st (writeFile: a new file renamed
// into place).
func writeState(paths envPaths, st *envState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(paths.state(), data)
}
