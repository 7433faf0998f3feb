package coverage

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Block is a block of statements a coverage profile counts, as `go tool
// cover` reads it: from StartLine.StartCol to EndLine.EndCol of its file.
type Block struct {
	StartLine, StartCol int
	EndLine, EndCol     int
	// NumStmt is how many statements the block holds.
	NumStmt int
	// Count is how often it ran (in set mode, 1 for at least once).
	Count int
}

// Holds says the block spans line.
func (b Block) Holds(line int) bool { return b.StartLine <= line && line <= b.EndLine }

// Profile is a text coverage profile (go test -coverprofile, go tool
// covdata textfmt): the blocks of each file, by the file's name in it, an
// import path and a file name ("example.com/m/pkg/file.go").
type Profile struct {
	// Mode is set, count or atomic.
	Mode string
	// Blocks are each file's blocks, sorted by position; a block the
	// profile lists more than once (several counter files) counts once,
	// with the counts added.
	Blocks map[string][]Block
}

// ParseProfile reads a text profile: a "mode: M" line, then lines
// "file:startLine.startCol,endLine.endCol numStmt count".
func ParseProfile(r io.Reader) (*Profile, error) {
	p := &Profile{Blocks: map[string][]Block{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			mode, ok := strings.CutPrefix(line, "mode: ")
			if !ok {
				return nil, fmt.Errorf("coverage profile: line 1 is %q, want \"mode: set|count|atomic\"", line)
			}
			p.Mode = mode
			continue
		}
		if line == "" {
			continue
		}
		file, b, err := parseBlock(line)
		if err != nil {
			return nil, fmt.Errorf("coverage profile: line %d: %w", n, err)
		}
		p.Blocks[file] = append(p.Blocks[file], b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("coverage profile: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("coverage profile: empty, want a \"mode:\" line first")
	}
	for file, blocks := range p.Blocks {
		p.Blocks[file] = mergeBlocks(blocks)
	}
	return p, nil
}

// Add adds q's blocks to p's, as the counter files of one run add up: a
// block both list counts once, with the counts added. It is how the
// profiles of a run's shards become the run's. Profiles of different
// modes do not add.
func (p *Profile) Add(q *Profile) error {
	if q == nil {
		return nil
	}
	if p.Mode != q.Mode {
		return fmt.Errorf("coverage profiles of mode %s and %s do not add up: build every binary with the same -covermode", p.Mode, q.Mode)
	}
	if p.Blocks == nil {
		p.Blocks = map[string][]Block{}
	}
	for file, blocks := range q.Blocks {
		p.Blocks[file] = mergeBlocks(append(slices.Clone(p.Blocks[file]), blocks...))
	}
	return nil
}

// parseBlock reads "file:a.b,c.d n count"; the file may hold ':'.
func parseBlock(line string) (string, Block, error) {
	var b Block
	colon := strings.LastIndexByte(line, ':')
	if colon < 1 {
		return "", b, fmt.Errorf("%q is not \"file:startLine.startCol,endLine.endCol numStmt count\"", line)
	}
	file := line[:colon]
	fields := strings.Fields(line[colon+1:])
	if len(fields) != 3 {
		return "", b, fmt.Errorf("%q is not \"file:startLine.startCol,endLine.endCol numStmt count\"", line)
	}
	start, end, ok := strings.Cut(fields[0], ",")
	var err error
	if ok {
		b.StartLine, b.StartCol, err = lineCol(start)
	}
	if ok && err == nil {
		b.EndLine, b.EndCol, err = lineCol(end)
	}
	if ok && err == nil {
		b.NumStmt, err = strconv.Atoi(fields[1])
	}
	if ok && err == nil {
		b.Count, err = strconv.Atoi(fields[2])
	}
	if !ok || err != nil || b.StartLine < 1 || b.EndLine < b.StartLine || b.NumStmt < 0 || b.Count < 0 {
		return "", b, fmt.Errorf("%q is not \"file:startLine.startCol,endLine.endCol numStmt count\"", line)
	}
	return file, b, nil
}

func lineCol(s string) (int, int, error) {
	l, c, ok := strings.Cut(s, ".")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not line.column", s)
	}
	line, err := strconv.Atoi(l)
	if err != nil {
		return 0, 0, err
	}
	col, err := strconv.Atoi(c)
	return line, col, err
}

// mergeBlocks sorts blocks by position and adds the counts of the same
// block listed more than once.
func mergeBlocks(blocks []Block) []Block {
	slices.SortFunc(blocks, func(a, b Block) int {
		return cmp.Or(cmp.Compare(a.StartLine, b.StartLine), cmp.Compare(a.StartCol, b.StartCol),
			cmp.Compare(a.EndLine, b.EndLine), cmp.Compare(a.EndCol, b.EndCol))
	})
	out := blocks[:0]
	for _, b := range blocks {
		if n := len(out); n > 0 && samePos(out[n-1], b) {
			out[n-1].Count += b.Count
			continue
		}
		out = append(out, b)
	}
	return out
}

func samePos(a, b Block) bool {
	return a.StartLine == b.StartLine && a.StartCol == b.StartCol && a.EndLine == b.EndLine && a.EndCol == b.EndCol
}
