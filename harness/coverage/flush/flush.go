package flush

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime/coverage"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/safefile"
)

// DefaultEvery is how often Start writes a process's counters
// unless told otherwise: a process killed without warning (SIGKILL, an
// evicted Pod) loses at most what it counted since.
const DefaultEvery = 10 * time.Second

// flushInto writes this process's meta-data and counters into dir and
// clears the counters.
func flushInto(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return fmt.Errorf("writing coverage meta-data into %s: %w", dir, err)
	}
	if err := coverage.WriteCountersDir(dir); err != nil {
		return fmt.Errorf("writing coverage counters into %s: %w", dir, err)
	}
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("clearing coverage counters: %w", err)
	}
	return nil
}

// builtWithCover says the running binary was built with -cover.
func builtWithCover() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-cover" {
			return s.Value == "true"
		}
	}
	return false
}

// Timeout is how long a process takes at most to answer a request
// (harness/coverage's RecordSpecs waits as long).
const Timeout = 30 * time.Second

// EnvCoverDir is the environment variable the Go runtime writes a -cover
// binary's counters into at exit, and where Start registers the process
// for requests by default.
const EnvCoverDir = "GOCOVERDIR"

// Options say where Start writes a process's counters and how often.
type Options struct {
	// Dir is where the counters go unless a request names another
	// directory, and where the process registers for requests: by
	// default $GOCOVERDIR, where the Go runtime writes them at exit.
	Dir string
	// Every is how often the counters are written while nobody asks:
	// each time a snapshot that replaces the last one, so that what a
	// killed process counted is lost only since then. 0 is
	// DefaultEvery; a negative value writes none.
	Every time.Duration
}

// Start makes this process's coverage counters available while it runs,
// for a binary built with go build -cover -covermode=atomic that a suite
// starts with GOCOVERDIR set (a controller manager; its main package must
// be among -coverpkg, or Go keeps no coverage of it at all): main calls it
// once and defers the stop it returns (before anything that may call
// os.Exit, which skips deferred calls).
//
//   - On request (Request; harness/coverage's RecordSpecs asks before and
//     after each spec) it writes the counters, and the meta-data that reads them, into
//     the directory the request names and clears them, so that the next
//     request gets only what was counted since: what one spec made this
//     process do.
//   - Every opts.Every it writes them into opts.Dir without clearing them,
//     replacing its last such snapshot, so that a process killed without
//     warning loses little.
//   - stop writes and clears them into opts.Dir and stops both. The Go
//     runtime writes what is counted after it at exit, as for any -cover
//     binary.
//
// Requests come over a Unix socket that only this user may use (Windows
// has them too), named in opts.Dir by a file flush-<pid>.addr, which stop
// removes. A binary built without -cover, or without GOCOVERDIR and
// opts.Dir, gets a stop that does nothing and no error: the same main
// serves both builds. A binary built with -cover in another mode than
// atomic gets an error: the runtime writes and clears counters while the
// program runs only in atomic mode.
func Start(opts Options) (stop func() error, err error) {
	noop := func() error { return nil }
	if opts.Dir == "" {
		opts.Dir = os.Getenv(EnvCoverDir)
	}
	if opts.Dir == "" {
		return noop, nil
	}
	if !builtWithCover() {
		return noop, nil
	}
	if err := coverage.WriteMeta(io.Discard); err != nil {
		return noop, fmt.Errorf("this binary was built with -cover, but Go keeps no coverage of it while it runs: is its main package among -coverpkg? (%w)", err)
	}
	if err := coverage.WriteCounters(io.Discard); err != nil {
		return noop, fmt.Errorf("flushing coverage counters while the program runs needs go build -cover -covermode=atomic: %w", err)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return noop, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return noop, err
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return noop, fmt.Errorf("writing coverage meta-data into %s: %w", dir, err)
	}
	f := &flusher{dir: dir, pid: os.Getpid(), done: make(chan struct{})}
	if err := f.listen(); err != nil {
		return noop, fmt.Errorf("listening for coverage flush requests: %w", err)
	}
	every := opts.Every
	if every == 0 {
		every = DefaultEvery
	}
	f.wg.Add(1)
	go f.serve()
	if every > 0 {
		f.wg.Add(1)
		go f.tick(every)
	}
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() { stopErr = f.stop() })
		return stopErr
	}, nil
}

// flusher is Start's state.
type flusher struct {
	dir      string
	pid      int
	ln       net.Listener
	addrFile string
	sockDir  string // the socket's directory, its own
	done     chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex
	snapshot []string // the counter files of the last snapshot, in dir
}

// maxSocketPath is the longest socket path every Unix system takes (the
// size of sun_path less the terminating NUL, with room to spare).
const maxSocketPath = 100

// addrGlob matches the files processes register with.
const addrGlob = "flush-*.addr"

// listen listens on a socket in a directory of its own that only this
// user can enter (os.MkdirTemp makes it 0700), so that no other local user
// can connect, whatever the umask made of the socket's own mode between
// its creation and the chmod: below $GOCOVERDIR (a read-only root file
// system has no writable temporary directory), or below the temporary
// directory where that path would be too long for a socket.
func (f *flusher) listen() error {
	parent := f.dir
	if len(filepath.Join(parent, "flush-0123456789", "s")) > maxSocketPath {
		parent = ""
	}
	d, err := os.MkdirTemp(parent, "flush-")
	if err != nil {
		return err
	}
	f.sockDir = d
	sock := filepath.Join(d, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		f.removeSockDir()
		return err
	}
	_ = os.Chmod(sock, 0o600)
	f.ln = ln
	// The address is published once the socket listens: a request that
	// finds the file and is refused found a process that is gone.
	f.addrFile = filepath.Join(f.dir, "flush-"+strconv.Itoa(f.pid)+".addr")
	if err := safefile.Write(f.addrFile, []byte(sock+"\n"), 0o600); err != nil {
		_ = ln.Close()
		f.removeSockDir()
		return err
	}
	return nil
}

func (f *flusher) removeSockDir() {
	if f.sockDir != "" {
		_ = os.RemoveAll(f.sockDir)
	}
}

func (f *flusher) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			select {
			case <-f.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		f.handle(c)
	}
}

// handle answers one request, "flush <dir>\n", with "ok\n" or
// "error <message>\n".
func (f *flusher) handle(c net.Conn) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(Timeout))
	line, err := bufio.NewReader(io.LimitReader(c, 64<<10)).ReadString('\n')
	if err != nil {
		return
	}
	reply := "ok\n"
	dir, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "flush ")
	switch {
	case !ok:
		reply = "error unknown request\n"
	case dir != "" && !filepath.IsAbs(dir):
		reply = "error the directory must be absolute\n"
	default:
		if dir == "" {
			dir = f.dir
		}
		if err := f.flush(dir); err != nil {
			reply = "error " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
		}
	}
	_, _ = io.WriteString(c, reply)
}

// flush writes and clears the counters into dir; the last snapshot, whose
// counts are now in dir, goes.
func (f *flusher) flush(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := flushInto(dir); err != nil {
		return err
	}
	f.removeSnapshot()
	return nil
}

func (f *flusher) removeSnapshot() {
	for _, name := range f.snapshot {
		_ = os.Remove(filepath.Join(f.dir, name))
	}
	f.snapshot = nil
}

func (f *flusher) tick(every time.Duration) {
	defer f.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-t.C:
			_ = f.snap()
		}
	}
}

// snap writes the counters into f.dir without clearing them, in place of
// the last snapshot.
func (f *flusher) snap() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	before, err := counterFiles(f.dir, f.pid)
	if err != nil {
		return err
	}
	if err := coverage.WriteCountersDir(f.dir); err != nil {
		return err
	}
	after, err := counterFiles(f.dir, f.pid)
	if err != nil {
		return err
	}
	f.removeSnapshot()
	for _, name := range after {
		if !slices.Contains(before, name) {
			f.snapshot = append(f.snapshot, name)
		}
	}
	return nil
}

// counterFiles are the names of the counter files pid wrote into dir.
func counterFiles(dir string, pid int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	mark := "." + strconv.Itoa(pid) + "."
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "covcounters.") && strings.Contains(e.Name(), mark) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (f *flusher) stop() error {
	close(f.done)
	_ = f.ln.Close()
	f.wg.Wait()
	err := os.Remove(f.addrFile)
	f.removeSockDir()
	return errors.Join(err, f.flush(f.dir))
}

// Request asks every process registered in dir (Start) to
// write its counters into the directory into and clear them, and waits
// until they have: it returns how many did. A registration whose process
// is gone is removed; a process that fails, or does not answer before ctx
// ends, is an error.
func Request(ctx context.Context, dir, into string) (int, error) {
	into, err := filepath.Abs(into)
	if err != nil {
		return 0, err
	}
	addrs, err := filepath.Glob(filepath.Join(dir, addrGlob))
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, addr := range addrs {
		ok, err := requestOne(ctx, addr, into)
		if ok {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// requestOne asks the process that addr registers.
func requestOne(ctx context.Context, addr, into string) (bool, error) {
	data, err := safefile.Read(addr, 4<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // stopped since the glob
	}
	if err != nil {
		return false, err
	}
	sock := strings.TrimSpace(string(data))
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		if gone(err, sock) {
			_ = os.Remove(addr)
			return false, nil
		}
		return false, fmt.Errorf("asking the process of %s for its coverage counters: %w", addr, err)
	}
	defer func() { _ = c.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stopWatch := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stopWatch()
	if _, err := io.WriteString(c, "flush "+into+"\n"); err != nil {
		return false, fmt.Errorf("asking the process of %s for its coverage counters: %w", addr, err)
	}
	reply, err := bufio.NewReader(io.LimitReader(c, 64<<10)).ReadString('\n')
	if err != nil {
		return false, fmt.Errorf("waiting for the process of %s to write its coverage counters: %w", addr, err)
	}
	reply = strings.TrimSuffix(reply, "\n")
	if reply != "ok" {
		return false, fmt.Errorf("the process of %s did not write its coverage counters into %s: %s",
			addr, into, strings.TrimPrefix(reply, "error "))
	}
	return true, nil
}

// gone says the dial error means nobody listens on sock any more.
func gone(err error, sock string) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
		return true
	}
	_, statErr := os.Stat(sock)
	return errors.Is(statErr, fs.ErrNotExist)
}
