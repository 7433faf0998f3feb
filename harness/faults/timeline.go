package faults

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Timeline records what was injected and when; safe for concurrent use.
type Timeline struct {
	mu     sync.Mutex
	events []Event
}

// Event is one fault: from Start until End (zero while it lasts).
type Event struct {
	What       string
	Start, End time.Time
}

// Begin records that a fault began now and returns the function that
// records its end.
func (t *Timeline) Begin(what string) (end func()) {
	t.mu.Lock()
	i := len(t.events)
	t.events = append(t.events, Event{What: what, Start: time.Now()})
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.events[i].End = time.Now()
			t.mu.Unlock()
		})
	}
}

// Mark records a fault that is a moment (a kill), not a period.
func (t *Timeline) Mark(what string) {
	now := time.Now()
	t.mu.Lock()
	t.events = append(t.events, Event{What: what, Start: now, End: now})
	t.mu.Unlock()
}

// Events returns a copy of what was recorded, in order.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

// Since is a timeline of the faults that began at or after start, or were
// still injected then: what one spec did to an environment that several
// specs break in turn.
func (t *Timeline) Since(start time.Time) *Timeline {
	out := &Timeline{}
	for _, e := range t.Events() {
		if !e.Start.Before(start) || e.End.IsZero() || e.End.After(start) {
			out.events = append(out.events, e)
		}
	}
	return out
}

// String is the timeline as a person reads it: one line per fault, with
// wall-clock times (to line up with logs) and durations.
func (t *Timeline) String() string {
	events := t.Events()
	if len(events) == 0 {
		return "no faults injected\n"
	}
	var b strings.Builder
	for _, e := range events {
		switch {
		case e.End.IsZero():
			fmt.Fprintf(&b, "%s  %s (still injected)\n", e.Start.UTC().Format(stamp), e.What)
		case e.End.Equal(e.Start):
			fmt.Fprintf(&b, "%s  %s\n", e.Start.UTC().Format(stamp), e.What)
		default:
			fmt.Fprintf(&b, "%s  %s for %s (until %s)\n", e.Start.UTC().Format(stamp), e.What,
				e.End.Sub(e.Start).Round(time.Millisecond), e.End.UTC().Format(stamp))
		}
	}
	return b.String()
}

const stamp = "15:04:05.000"
