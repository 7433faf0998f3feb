package cycles

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/process/leaks"
)

const (
	// Slack is how many file descriptors and goroutines this process may
	// hold above its baseline after the cycles: an HTTP keep-alive
	// connection to a control plane that just stopped is closed by its
	// transport's read loop a moment after the peer's close arrives, and
	// the runtime parks an idle timer or poller goroutine now and then.
	// A leak of one per cycle exceeds it within a few cycles.
	Slack = 2
	// cycleSettle bounds the wait for file descriptors and goroutines to
	// come back to the baseline after the last cycle.
	cycleSettle = 5 * time.Second
	// GiveUp ends the cycles after that many failed starts in a row: the
	// setup is broken, and each failure may take the whole start timeout.
	GiveUp = 3
)

// Options say what Run starts and how often.
type Options struct {
	// Cycles is how many times the control plane is started and stopped.
	Cycles int
	// ControlPlane is what each cycle starts (controlplane.Start), whose
	// processes, ports and directories the harness knows: its scratch
	// directories are found by controlplane.ScratchGlobs of these options.
	ControlPlane controlplane.Options
	// Progress, when set, receives a line after every tenth of the
	// cycles.
	Progress io.Writer
}

// Run starts and stops the control plane o.Cycles times and reports what
// failed and what the cycles left behind. Its error is for a check that
// could not be made (the context ended, /proc could not be read); failed
// starts and stops and leaks are in the Report (Report.OK).
func Run(ctx context.Context, o Options) (*Report, error) {
	// Without /proc nothing can be attributed: say so before any cycle.
	if _, err := leaks.LoopbackListeners(); err != nil {
		return nil, err
	}
	globs, err := controlplane.ScratchGlobs(o.ControlPlane)
	if err != nil {
		return nil, err
	}
	l, err := newCycleLedger(globs)
	if err != nil {
		return nil, err
	}
	var (
		rep      = &Report{}
		failed   = map[int]bool{}
		base     *leaks.Self
		inARow   int
		seen     = map[string]bool{}
		progress = o.Progress
	)
	if progress == nil {
		progress = io.Discard
	}
	fail := func(i int, format string, args ...any) {
		failed[i] = true
		rep.Failures = append(rep.Failures, fmt.Sprintf("cycle %d: ", i+1)+fmt.Sprintf(format, args...))
	}
	began := time.Now()
	for i := range o.Cycles {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep.Cycles++
		scratchBefore, err := l.scratch()
		if err != nil {
			return nil, err
		}
		t := time.Now()
		cp, err := controlplane.Start(o.ControlPlane)
		d := time.Since(t)
		if err != nil {
			fail(i, "start: %v", err)
			// Start stops what it started; what it made and left is only
			// known by its name.
			if err := l.adoptNew(scratchBefore, i); err != nil {
				return nil, err
			}
			if inARow++; inARow == GiveUp {
				rep.Failures = append(rep.Failures, fmt.Sprintf("gave up after %d failed starts in a row", GiveUp))
				break
			}
		} else {
			inARow = 0
			rep.Starts = append(rep.Starts, d)
			if err := l.recordControlPlane(cp, i); err != nil {
				_ = cp.Stop()
				return nil, err
			}
			t = time.Now()
			if err := cp.Stop(); err != nil {
				fail(i, "stop: %v", err)
			}
			rep.Stops = append(rep.Stops, time.Since(t))
		}
		// Each survivor fails the cycle it is first seen after.
		procs := leaks.Procs()
		left := l.ours(procs)
		for _, p := range left {
			if !seen[p.String()] {
				seen[p.String()] = true
				fail(i, "%s outlived Stop", p)
			}
		}
		held, _, err := l.heldPorts(procs)
		if err != nil {
			return nil, err
		}
		for _, h := range held {
			if !seen[h.String()] {
				seen[h.String()] = true
				fail(i, "%s outlived Stop", h)
			}
		}
		l.endCycle(left)
		if i == 0 {
			// The baseline is taken once the first cycle made what a
			// process keeps for good (the etcd template, HTTP transports,
			// the runtime's poller).
			if base, err = leaks.Steady(cycleSettle); err != nil {
				return nil, err
			}
		}
		if every := max(1, o.Cycles/10); (i+1)%every == 0 || i+1 == o.Cycles {
			fmt.Fprintf(progress, "  start/stop cycle %d/%d: failures %d, last start %s\n", i+1, o.Cycles, len(failed), secs(d))
		}
	}
	rep.Took = time.Since(began)
	rep.Failed = len(failed)
	if err := l.leaks(base, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// Report is what Run found: failed cycles and what the cycles left behind.
type Report struct {
	// Cycles is how many cycles ran, Failed how many of them had a failure.
	Cycles, Failed int
	// Failures say what failed, by cycle.
	Failures []string
	// Processes are the cycles' processes that still run, Ports the
	// cycles' ports something of theirs listens on: each described.
	Processes, Ports []string
	// Tmpfs and Temp are the directories the cycles made that are left:
	// etcd's tmpfs data directories and the others (certificates,
	// kubeconfigs, etcd template staging).
	Tmpfs, Temp []string
	// FDs and Goroutines are this process's growth over its baseline
	// (taken after the first cycle); FDList and GoroutineList say what
	// the new ones are. Up to Slack of each is no leak.
	FDs, Goroutines       int
	FDList, GoroutineList []string
	// Notes are what the cycles found that is not theirs: other control
	// planes on the machine.
	Notes []string
	// Starts and Stops are the durations of the successful starts and of
	// the stops; Took is the whole run's.
	Starts, Stops []time.Duration
	Took          time.Duration
}

// OK reports whether every cycle succeeded and nothing leaked.
func (r *Report) OK() bool { return len(r.Failures) == 0 && r.Leaks() == 0 }

// Leaks counts what the cycles left behind: each process, port and
// directory, and file descriptors and goroutines beyond Slack once each.
func (r *Report) Leaks() int {
	n := len(r.Processes) + len(r.Ports) + len(r.Tmpfs) + len(r.Temp)
	if r.FDs > Slack {
		n++
	}
	if r.Goroutines > Slack {
		n++
	}
	return n
}

// String is the report in one line:
//
//	start/stop cycles: 200, failures 0, leaked: processes 0, listening ports 0, tmpfs dirs 0, temp dirs 0, fds +0, goroutines +0; start p50 0.45s ...
func (r *Report) String() string {
	return fmt.Sprintf("start/stop cycles: %d, failures %d, leaked: processes %d, listening ports %d, tmpfs dirs %d, temp dirs %d, fds %+d, goroutines %+d; %s; %d cycles in %s",
		r.Cycles, r.Failed, len(r.Processes), len(r.Ports), len(r.Tmpfs), len(r.Temp), r.FDs, r.Goroutines, cycleTimes(r.Starts, r.Stops), r.Cycles, r.Took.Round(time.Second))
}

// WriteDetails writes what failed and what leaked, one indented line
// each, and the notes.
func (r *Report) WriteDetails(w io.Writer) {
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  failure: %s\n", f)
	}
	for _, p := range r.Processes {
		fmt.Fprintf(w, "  leaked process: %s\n", p)
	}
	for _, p := range r.Ports {
		fmt.Fprintf(w, "  leaked listening port: %s\n", p)
	}
	for _, d := range r.Tmpfs {
		fmt.Fprintf(w, "  leaked tmpfs dir: %s\n", d)
	}
	for _, d := range r.Temp {
		fmt.Fprintf(w, "  leaked temp dir: %s\n", d)
	}
	if r.FDs > Slack {
		fmt.Fprintf(w, "  leaked fds: %+d over the baseline after the first cycle (%d allowed): %s\n", r.FDs, Slack, strings.Join(r.FDList, ", "))
	}
	if r.Goroutines > Slack {
		fmt.Fprintf(w, "  leaked goroutines: %+d over the baseline after the first cycle (%d allowed):\n", r.Goroutines, Slack)
		for _, g := range r.GoroutineList {
			fmt.Fprintf(w, "    %s\n", g)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func cycleTimes(starts, stops []time.Duration) string {
	if len(starts) == 0 {
		return "no start succeeded"
	}
	return fmt.Sprintf("start p50 %s p90 %s max %s, stop p50 %s",
		secs(percentile(starts, 50)), secs(percentile(starts, 90)), secs(percentile(starts, 100)), secs(percentile(stops, 50)))
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// cycleLedger is what the cycles made, and what was there before them.
type cycleLedger struct {
	self  int
	globs []string // controlplane.ScratchGlobs; the first is etcd's tmpfs
	// children and scratchBefore are this process's children and the
	// glob matches from before the cycles.
	children      map[leaks.Key]bool
	scratchBefore map[string]bool
	procs         map[leaks.Key]string // each process a cycle started or left: what it is
	// groups are the process groups of the running cycle's processes
	// (each its own). They count only until the cycle ends: pids are
	// reused (pid_max may be 32768), and a process group with them.
	groups map[int]string
	dirs   map[string]string // each directory a cycle made: the cycle
	ports  map[int]*cyclePort
}

// cyclePort is a port a cycle's process listened on.
type cyclePort struct {
	port    int
	owner   string          // the process and cycle
	sockets map[uint64]bool // the inodes of its listening sockets
}

func newCycleLedger(globs []string) (*cycleLedger, error) {
	l := &cycleLedger{
		self: os.Getpid(), globs: globs, children: map[leaks.Key]bool{},
		procs: map[leaks.Key]string{}, groups: map[int]string{}, dirs: map[string]string{}, ports: map[int]*cyclePort{},
	}
	for _, p := range leaks.Procs() {
		if p.PPID == l.self {
			l.children[p.Key()] = true
		}
	}
	var err error
	l.scratchBefore, err = l.scratch()
	return l, err
}

// scratch lists what the globs match now.
func (l *cycleLedger) scratch() (map[string]bool, error) {
	m := map[string]bool{}
	for _, g := range l.globs {
		matches, err := filepath.Glob(g)
		if err != nil {
			return nil, err
		}
		for _, p := range matches {
			m[p] = true
		}
	}
	return m, nil
}

// recordControlPlane records the processes, directories and ports of a
// control plane that cycle i started.
func (l *cycleLedger) recordControlPlane(cp *controlplane.ControlPlane, i int) error {
	for _, dir := range []string{cp.EtcdDataDir, cp.Dir()} {
		if err := l.recordDir(dir, i); err != nil {
			return err
		}
	}
	owners := map[int]string{}
	for name, pid := range cp.PIDs() {
		owners[pid] = fmt.Sprintf("%s of cycle %d", name, i+1)
	}
	flagged := map[int]string{}
	for role, port := range cp.Ports() {
		flagged[port] = fmt.Sprintf("%s of cycle %d", role, i+1)
	}
	return l.recordProcs(owners, flagged)
}

// recordDir records a directory a cycle made. One that no glob matches
// would go unnoticed if a failed start left it, so it is an error.
func (l *cycleLedger) recordDir(dir string, i int) error {
	if dir == "" {
		return nil
	}
	for _, g := range l.globs {
		if ok, _ := filepath.Match(g, dir); ok {
			l.dirs[dir] = fmt.Sprintf("cycle %d", i+1)
			return nil
		}
	}
	return fmt.Errorf("the control plane made %s, which controlplane.ScratchGlobs does not cover (%s)", dir, strings.Join(l.globs, " "))
}

// recordProcs records running processes (pid: what it is) and the ports
// they listen on, with the ports they were told to use (port: what for).
func (l *cycleLedger) recordProcs(owners, flagged map[int]string) error {
	listeners, err := leaks.LoopbackListeners()
	if err != nil {
		return err
	}
	for pid, what := range owners {
		p, err := leaks.ReadProc(pid)
		if err != nil {
			return fmt.Errorf("%s (pid %d) is not running: %w", what, pid, err)
		}
		l.procs[p.Key()] = what
		l.groups[p.PGID] = what
		sockets := leaks.SocketInodes(pid)
		for _, ln := range listeners {
			if sockets[ln.Inode] {
				l.port(ln.Port, what).sockets[ln.Inode] = true
			}
		}
	}
	for port, what := range flagged {
		l.port(port, what)
	}
	return nil
}

func (l *cycleLedger) port(port int, owner string) *cyclePort {
	if l.ports[port] == nil {
		l.ports[port] = &cyclePort{port: port, owner: owner, sockets: map[uint64]bool{}}
	}
	return l.ports[port]
}

// adoptNew records as cycle i's what the globs match now and did not
// before, and no running process uses: what a failed start made and left,
// rather than what another control plane on the machine runs on.
func (l *cycleLedger) adoptNew(before map[string]bool, i int) error {
	now, err := l.scratch()
	if err != nil {
		return err
	}
	procs := leaks.Procs()
	ours := l.attribute(procs)
	for path := range now {
		if before[path] {
			continue
		}
		used := false
		for _, p := range procs {
			if p.Mentions(path) && ours[p.PID] == "" {
				used = true
				break
			}
		}
		if !used {
			l.dirs[path] = fmt.Sprintf("cycle %d, a failed start", i+1)
		}
	}
	return nil
}

// ours returns the running processes that are the cycles' (attribute).
func (l *cycleLedger) ours(procs []leaks.Proc) []procFinding {
	var found []procFinding
	why := l.attribute(procs)
	for _, p := range procs {
		if why[p.PID] != "" {
			found = append(found, procFinding{p, why[p.PID]})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].PID < found[j].PID })
	return found
}

// endCycle follows the processes the cycle left (found after its Stop) by
// pid and start time from now on, and forgets its process groups.
func (l *cycleLedger) endCycle(left []procFinding) {
	for _, f := range left {
		l.procs[f.Key()] = f.why
	}
	l.groups = map[int]string{}
}

// attribute says, by pid, which of procs are the cycles' and why: one a
// cycle started or left, one in the running cycle's process groups (a
// child of its processes), a child of one of these, a child of this
// process that was not there before the cycles (an unreaped one
// included), or one whose command line names a directory a cycle made.
func (l *cycleLedger) attribute(procs []leaks.Proc) map[int]string {
	byPID := map[int]leaks.Proc{}
	for _, p := range procs {
		byPID[p.PID] = p
	}
	out := map[int]string{}
	for _, p := range procs {
		if why := l.why(p, byPID); why != "" {
			out[p.PID] = why
		}
	}
	return out
}

func (l *cycleLedger) why(p leaks.Proc, byPID map[int]leaks.Proc) string {
	if p.PID == l.self {
		return ""
	}
	if what, ok := l.procs[p.Key()]; ok {
		return what
	}
	if what, ok := l.groups[p.PGID]; ok {
		return "in the process group of " + what
	}
	if parent, ok := byPID[p.PPID]; ok && l.procs[parent.Key()] != "" {
		return "a child of " + l.procs[parent.Key()]
	}
	if p.PPID == l.self && !l.children[p.Key()] {
		return "a child of this process"
	}
	for dir, cycle := range l.dirs {
		if p.Mentions(dir) {
			return "uses " + dir + " of " + cycle
		}
	}
	return ""
}

// procFinding is a process of the cycles that still runs.
type procFinding struct {
	leaks.Proc
	why string
}

func (f procFinding) String() string {
	state := ""
	if f.Zombie() {
		state = ", a zombie"
	}
	return fmt.Sprintf("pid %d (%s%s): %s", f.PID, f.why, state, strings.Join(f.Cmdline, " "))
}

// portFinding is a port of the cycles that something listens on.
type portFinding struct {
	ln     leaks.Listener
	owner  string // the cycle's process it was for
	holder string // who holds it now
}

func (f portFinding) String() string {
	return fmt.Sprintf("port %s (%s) held by %s", f.ln.Addr(), f.owner, f.holder)
}

// heldPorts returns the cycles' ports that are listened on still: through a
// socket a cycle's process listened on, or by a process of the cycles.
// Others that listen on one of them now (the kernel hands a free port to
// whoever asks next) are returned as notes.
func (l *cycleLedger) heldPorts(procs []leaks.Proc) (held []portFinding, notes []string, err error) {
	listeners, err := leaks.LoopbackListeners()
	if err != nil {
		return nil, nil, err
	}
	var candidates []leaks.Listener
	for _, ln := range listeners {
		if l.ports[ln.Port] != nil {
			candidates = append(candidates, ln)
		}
	}
	if len(candidates) == 0 {
		return nil, nil, nil
	}
	why := l.attribute(procs)
	holders := map[uint64][]leaks.Proc{}
	for _, p := range procs {
		for inode := range leaks.SocketInodes(p.PID) {
			holders[inode] = append(holders[inode], p)
		}
	}
	for _, ln := range candidates {
		cp := l.ports[ln.Port]
		var names []string
		ours := cp.sockets[ln.Inode]
		for _, p := range holders[ln.Inode] {
			names = append(names, fmt.Sprintf("pid %d (%s)", p.PID, strings.Join(p.Cmdline, " ")))
			ours = ours || why[p.PID] != ""
		}
		holder := strings.Join(names, ", ")
		if holder == "" {
			holder = "no process found"
		}
		f := portFinding{ln: ln, owner: cp.owner, holder: holder}
		if ours {
			held = append(held, f)
		} else {
			notes = append(notes, f.String()+": not the cycles'")
		}
	}
	return held, notes, nil
}

// leaks compares the machine and this process with the ledger and base,
// this process's state after the first cycle (nil: no comparison), and
// adds what it finds to r. File descriptors and goroutines get
// cycleSettle to come back first.
func (l *cycleLedger) leaks(base *leaks.Self, r *Report) error {
	if base != nil {
		now, err := leaks.Settle(base, Slack, cycleSettle)
		if err != nil {
			return err
		}
		r.FDs, r.Goroutines = len(now.FDs)-len(base.FDs), now.Goroutines-base.Goroutines
		r.FDList = now.NewFDs(base)
		r.GoroutineList = now.NewGoroutines(base)
	}
	procs := leaks.Procs()
	for _, p := range l.ours(procs) {
		r.Processes = append(r.Processes, p.String())
	}
	held, notes, err := l.heldPorts(procs)
	if err != nil {
		return err
	}
	for _, h := range held {
		r.Ports = append(r.Ports, h.String())
	}
	r.Notes = append(r.Notes, notes...)
	for dir, cycle := range l.dirs {
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		entry := dir + " (" + cycle + ")"
		if ok, _ := filepath.Match(l.globs[0], dir); ok {
			r.Tmpfs = append(r.Tmpfs, entry)
		} else {
			r.Temp = append(r.Temp, entry)
		}
	}
	sort.Strings(r.Tmpfs)
	sort.Strings(r.Temp)
	now, err := l.scratch()
	if err != nil {
		return err
	}
	others := 0
	for path := range now {
		if !l.scratchBefore[path] && l.dirs[path] == "" {
			others++
		}
	}
	if others > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d new matches of %s that no cycle made: other control planes on this machine", others, strings.Join(l.globs, " ")))
	}
	return nil
}
