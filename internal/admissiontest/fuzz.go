package admissiontest

// Shared by the webhooks' fuzz targets: their seeds and what a patch may
// not lose.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// AddFixtures adds every admission review matching pattern (YAML, as the
// fixtures are written) to f's seed corpus as JSON, and fails when none
// matches.
func AddFixtures(f *testing.F, pattern string) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no admission fixtures match %s: %v", pattern, err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		body, err := yaml.YAMLToJSON(data)
		if err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		f.Add(body)
	}
}

// LostValues lists, as JSON pointers, the values of raw that patched no
// longer holds: none may go, but for null, false, 0, "", {} and [], which
// decode as no value at all. Values may change form (a quantity 0.5 may
// become 500m); callers compare what they mean on the decoded objects.
// shift, when set, says how many elements a patch inserts in front of the
// array at a path (an injected init container, say); the array's own
// elements are looked for that far down.
func LostValues(t testing.TB, raw, patched []byte, shift func(path string) int) []string {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("the object of an allowed request is no JSON: %v", err)
	}
	if err := json.Unmarshal(patched, &b); err != nil {
		t.Fatalf("the patched object is no JSON: %v", err)
	}
	escape := strings.NewReplacer("~", "~0", "/", "~1")
	var lost []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		switch a := a.(type) {
		case map[string]any:
			bm, ok := b.(map[string]any)
			if !ok {
				lost = append(lost, path)
				return
			}
			for k, v := range a {
				p := path + "/" + escape.Replace(k)
				if bv, ok := bm[k]; ok {
					walk(p, v, bv)
				} else if !IsZero(v) {
					lost = append(lost, p)
				}
			}
		case []any:
			bl, ok := b.([]any)
			n := 0
			if shift != nil {
				n = shift(path)
			}
			if !ok || len(bl) < len(a)+n {
				lost = append(lost, path)
				return
			}
			for i, v := range a {
				walk(path+"/"+strconv.Itoa(i), v, bl[i+n])
			}
		}
	}
	walk("", a, b)
	return lost
}
