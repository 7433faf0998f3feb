package report

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wholeExcerpt is excerpt as it was when it read the whole file: the
// reference the streaming one must match.
func wholeExcerpt(data []byte) (Excerpt, bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return Excerpt{}, false
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	e := Excerpt{Lines: len(lines)}
	if len(lines) > excerptLines {
		e.Omitted = len(lines) - excerptLines
		lines = lines[e.Omitted:]
	}
	for i, l := range lines {
		if len(l) > excerptLineLen {
			lines[i] = l[:excerptLineLen] + " …"
		}
	}
	e.Text = strings.Join(lines, "\n")
	return e, true
}

// TestExcerptReadsAPieceAtATime: the excerpt of a log, read a piece at a
// time to hold no more than its last lines, is what reading the whole
// file gave: over empty files, empty lines at the end, lines longer than
// the reader's buffer and a NUL byte, from a seeded source.
func TestExcerptReadsAPieceAtATime(t *testing.T) {
	dir := t.TempDir()
	tr, err := openTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(35, 7))
	pieces := []string{"", "\n", "\n\n", "x", "a line", " ", strings.Repeat("y", excerptLineLen+3), strings.Repeat("z", 5000)}
	cases := []string{"", "\n", "\n\n\n", "one", "one\n", "\x00", "a\n\x00\n"}
	for range 300 {
		var b strings.Builder
		for range rng.IntN(80) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for i, data := range cases {
		if err := os.WriteFile(filepath.Join(dir, "log"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		got, gotOK := excerpt(tr, "log")
		want, wantOK := wholeExcerpt([]byte(data))
		if diff := cmp.Diff(want, got); diff != "" || gotOK != wantOK {
			t.Fatalf("case %d (%d bytes): ok %v, want %v (-want +got)\n%s", i, len(data), gotOK, wantOK, diff)
		}
	}
}
