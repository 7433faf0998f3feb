package framework

import (
	"bytes"
	"io"
	"slices"
	"sync"
	"time"
)

// LogBuffer keeps every line written to it with the time it arrived, so a
// failure bundle can hold the manager's log for one spec's time window.
// Writes are also passed on to Tee, when set.
type LogBuffer struct {
	Tee io.Writer

	mu      sync.Mutex
	partial []byte
	lines   []logLine
}

type logLine struct {
	at   time.Time
	text []byte
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	data := slices.Concat(b.partial, p)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		b.lines = append(b.lines, logLine{at: now, text: append([]byte(nil), data[:i+1]...)})
		data = data[i+1:]
	}
	b.partial = append([]byte(nil), data...)
	if b.Tee != nil {
		if _, err := b.Tee.Write(p); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Between returns the lines that arrived from start to end, inclusive.
func (b *LogBuffer) Between(start, end time.Time) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out bytes.Buffer
	for _, l := range b.lines {
		if !l.at.Before(start) && !l.at.After(end) {
			out.Write(l.text)
		}
	}
	return out.Bytes()
}
