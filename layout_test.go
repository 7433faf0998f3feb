package kubeharness_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoUpwardImports keeps the rest of the module's arrows pointing one
// way: the specs (e2e/) and the commands (cmd/) stand on this operator's
// wiring (internal/), which stands on the operator, its webhooks and the
// harness; nothing imports what stands above it. The operator's and the
// webhooks' own tests may use internal/'s test helpers; their code may not.
func TestNoUpwardImports(t *testing.T) {
	const module = "github.com/kubeharness/kubeharness"
	rules := []struct {
		from  string   // the packages below this directory
		never []string // may import no package below these
		tests bool     // counting what their tests import
	}{
		{from: "operator", never: []string{"internal", "harness", "cmd", "e2e"}},
		{from: "webhook", never: []string{"internal", "harness", "cmd", "e2e"}},
		{from: "internal", never: []string{"cmd", "e2e"}, tests: true},
		{from: "cmd", never: []string{"e2e"}, tests: true},
		{from: "harness", never: []string{"operator", "webhook", "internal", "cmd", "e2e"}, tests: true},
	}
	// With -test, a package with tests is listed again as "pkg [pkg.test]"
	// (and "pkg_test [pkg.test]", "pkg.test"), with what its tests import.
	out, err := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}}\t{{join .Deps \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -test: %v\n%s", err, out)
	}
	below := func(pkg, dir string) bool {
		return pkg == module+"/"+dir || strings.HasPrefix(pkg, module+"/"+dir+"/")
	}
	checked := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, deps, _ := strings.Cut(line, "\t")
		pkg, _, isTest := strings.Cut(name, " ")
		isTest = isTest || strings.HasSuffix(pkg, ".test")
		pkg = strings.TrimSuffix(strings.TrimSuffix(pkg, ".test"), "_test")
		for _, r := range rules {
			if !below(pkg, r.from) || (isTest && !r.tests) {
				continue
			}
			checked[r.from]++
			for _, dep := range strings.Fields(deps) {
				for _, never := range r.never {
					if below(dep, never) {
						t.Errorf("%s imports %s (directly or through its imports): nothing under %s/ may import %s/", name, dep, r.from, never)
					}
				}
			}
		}
	}
	for _, r := range rules {
		if checked[r.from] == 0 {
			t.Errorf("go list -test listed no package under %s/; is the pattern right?\n%s", r.from, out)
		}
	}
}
