package coverage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// change is one file a diff since a commit names.
type change struct {
	// Status is git's: A added, D deleted, M modified, R renamed, C
	// copied, T type changed; '?' untracked.
	Status byte
	// Old and New are its paths before and after, relative to the
	// repository's root with slashes; "" on the side it is absent.
	Old, New string
	// Hunks are the changed line ranges; none for a rename or copy
	// without edits, and for a change git shows no lines of (a binary
	// file, a mode).
	Hunks []hunk
}

// path is the change's path now, or before when it is gone.
func (c change) path() string {
	if c.New != "" {
		return c.New
	}
	return c.Old
}

// hunk is a range of lines a diff replaces: OldLines lines from OldStart
// by NewLines lines from NewStart. A range of no lines starts after the
// line it names (OldStart 3, OldLines 0: between lines 3 and 4).
type hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
}

// git runs git in the repository top and returns its standard output.
func git(ctx context.Context, top string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", top, "-c", "core.quotePath=false"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// diffFlags make git's output the same whatever its configuration says.
var diffFlags = []string{"--no-color", "--no-ext-diff", "--no-textconv", "--no-relative", "-M", "--src-prefix=a/", "--dst-prefix=b/"}

// changes are the files that differ between the commit since and the
// working tree of the repository top (untracked files too, as added),
// with the lines that changed.
func changes(ctx context.Context, top, since string) ([]change, error) {
	status, err := git(ctx, top, append(append([]string{"diff"}, diffFlags...), "--name-status", "-z", since, "--")...)
	if err != nil {
		return nil, err
	}
	var out []change
	fields := strings.Split(strings.TrimSuffix(string(status), "\x00"), "\x00")
	for i := 0; i < len(fields) && fields[i] != ""; {
		st := fields[i][0]
		c := change{Status: st}
		switch st {
		case 'R', 'C':
			if i+2 >= len(fields) {
				return nil, fmt.Errorf("git diff --name-status: a rename without its two paths")
			}
			c.Old, c.New = fields[i+1], fields[i+2]
			i += 3
		default:
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("git diff --name-status: a status without its path")
			}
			switch st {
			case 'A':
				c.New = fields[i+1]
			case 'D':
				c.Old = fields[i+1]
			default:
				c.Old, c.New = fields[i+1], fields[i+1]
			}
			i += 2
		}
		out = append(out, c)
	}
	patch, err := git(ctx, top, append(append([]string{"diff"}, diffFlags...), "--unified=0", since, "--")...)
	if err != nil {
		return nil, err
	}
	hunks, err := parseHunks(patch)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Hunks = hunks[out[i].Old+"\x00"+out[i].New]
		if out[i].Status == 'C' { // the original is still there, unchanged
			out[i].Old, out[i].Status = "", 'A'
		}
	}
	untracked, err := git(ctx, top, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(string(untracked), "\x00") {
		if name != "" {
			out = append(out, change{Status: '?', New: name})
		}
	}
	return out, nil
}

// parseHunks reads a diff with --unified=0 into each file's hunks, by
// old path, NUL, new path ("" for /dev/null).
func parseHunks(patch []byte) (map[string][]hunk, error) {
	out := map[string][]hunk{}
	var oldName, newName string
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "diff --git "):
			oldName, newName = "", ""
		case strings.HasPrefix(line, "rename from "):
			oldName = unquote(strings.TrimPrefix(line, "rename from "))
		case strings.HasPrefix(line, "rename to "):
			newName = unquote(strings.TrimPrefix(line, "rename to "))
		case strings.HasPrefix(line, "--- "):
			oldName = diffName(strings.TrimPrefix(line, "--- "), "a/")
		case strings.HasPrefix(line, "+++ "):
			newName = diffName(strings.TrimPrefix(line, "+++ "), "b/")
		case strings.HasPrefix(line, "@@ "):
			h, err := parseHunkHeader(line)
			if err != nil {
				return nil, err
			}
			k := oldName + "\x00" + newName
			out[k] = append(out[k], h)
		}
	}
	return out, sc.Err()
}

// diffName is the path a ---/+++ line names, without its prefix; "" for
// /dev/null.
func diffName(s, prefix string) string {
	s = strings.TrimSuffix(s, "\t") // git ends a name holding a blank with a tab
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(unquote(s), prefix)
}

// unquote undoes git's C-style quoting of a path with unusual characters.
func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@ ...".
func parseHunkHeader(line string) (hunk, error) {
	var h hunk
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return h, fmt.Errorf("git diff: %q is not a hunk header", line)
	}
	var err1, err2 error
	h.OldStart, h.OldLines, err1 = rangeOf(f[1][1:])
	h.NewStart, h.NewLines, err2 = rangeOf(f[2][1:])
	if err1 != nil || err2 != nil {
		return h, fmt.Errorf("git diff: %q is not a hunk header", line)
	}
	return h, nil
}

func rangeOf(s string) (start, n int, err error) {
	a, b, ok := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	n = 1
	if ok {
		n, err = strconv.Atoi(b)
	}
	return start, n, err
}
