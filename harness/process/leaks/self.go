package leaks

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"
)

// settlePoll is how often Steady and Settle look again.
const settlePoll = 100 * time.Millisecond

// Self is this process's file descriptors and goroutines at one moment.
type Self struct {
	// FDs maps each open descriptor to what it refers to.
	FDs map[string]string
	// Goroutines is how many run, and Stacks how many by stack (but for
	// the one that looked).
	Goroutines int
	Stacks     map[string]int
}

// ReadSelf looks at this process now.
func ReadSelf() (*Self, error) {
	fds, err := openFDs()
	if err != nil {
		return nil, fmt.Errorf("listing this process's file descriptors: %w", err)
	}
	return &Self{FDs: fds, Goroutines: runtime.NumGoroutine(), Stacks: goroutineStacks()}, nil
}

// Steady returns this process's state once two looks 100ms apart agree on
// the counts, or after within: connections to a server just stopped are
// still closing right after it stops.
func Steady(within time.Duration) (*Self, error) {
	deadline := time.Now().Add(within)
	last, err := ReadSelf()
	for err == nil {
		time.Sleep(settlePoll) // letting transports notice closed connections
		var now *Self
		if now, err = ReadSelf(); err != nil {
			break
		}
		if len(now.FDs) == len(last.FDs) && now.Goroutines == last.Goroutines || time.Now().After(deadline) {
			return now, nil
		}
		last = now
	}
	return nil, err
}

// Settle waits up to within for file descriptors and goroutines to come
// back within slack of base, and returns the state it last saw.
func Settle(base *Self, slack int, within time.Duration) (*Self, error) {
	deadline := time.Now().Add(within)
	for {
		now, err := ReadSelf()
		if err != nil {
			return nil, err
		}
		if len(now.FDs)-len(base.FDs) <= slack && now.Goroutines-base.Goroutines <= slack || time.Now().After(deadline) {
			return now, nil
		}
		time.Sleep(settlePoll) // waiting for transports to notice closed connections
	}
}

// NewFDs describes the descriptors open now that were not in base, or
// refer to something else: "fd -> target".
func (s *Self) NewFDs(base *Self) []string {
	var out []string
	for fd, target := range s.FDs {
		if base.FDs[fd] != target {
			out = append(out, fd+" -> "+target)
		}
	}
	sort.Strings(out)
	return out
}

// NewGoroutines describes the stacks that have more goroutines now than in
// base, by their innermost frame outside the runtime: "+N at function
// file:line".
func (s *Self) NewGoroutines(base *Self) []string {
	var out []string
	for stack, n := range s.Stacks {
		if d := n - base.Stacks[stack]; d > 0 {
			where := "?"
			_, frames, _ := strings.Cut(stack, "\n")
			for _, line := range strings.Split(frames, "\n") {
				f := strings.Fields(line) // "#", pc, function+offset, file:line
				if len(f) >= 4 && !strings.HasPrefix(f[2], "runtime.") && !strings.HasPrefix(f[2], "internal/") {
					where = f[2] + " " + f[3]
					break
				}
			}
			out = append(out, fmt.Sprintf("%+d at %s", d, where))
		}
	}
	sort.Strings(out)
	return out
}

// goroutineStacks counts goroutines by stack (runtime/pprof's debug=1
// profile, grouped by program counters), but for the calling one.
func goroutineStacks() map[string]int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	_, profile, _ := strings.Cut(buf.String(), "\n") // "goroutine profile: total N"
	stacks := map[string]int{}
	for _, block := range strings.Split(profile, "\n\n") {
		head, frames, _ := strings.Cut(block, "\n")
		count, pcs, ok := strings.Cut(head, " @ ")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || strings.Contains(frames, "runtime/pprof.writeRuntimeProfile") {
			continue // not a stack, or the goroutine taking the profile
		}
		stacks[pcs+"\n"+frames] += n
	}
	return stacks
}
