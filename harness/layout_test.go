package harness_test

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestImportsNothingOutsideHarness keeps the library free of the rest of
// the module: the operator, its webhooks, its specs and its commands.
func TestImportsNothingOutsideHarness(t *testing.T) {
	const module = "github.com/kubeharness/kubeharness"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/harness/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var leaks []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, module+"/") && !strings.HasPrefix(pkg, module+"/harness") {
			leaks = append(leaks, pkg)
		}
	}
	if len(leaks) > 0 {
		t.Errorf("packages under harness/ import these packages of the module outside harness/ (the library must not):\n  %s",
			strings.Join(leaks, "\n  "))
	}
	if !strings.Contains(string(out), module+"/harness/controlplane") {
		t.Errorf("go list -deps did not list harness/controlplane; is the pattern right?\n%s", out)
	}
}

// TestDocListsEveryPackage keeps doc.go, the library's table of contents,
// whole: each package under harness/ has its entry there (a subpackage or
// an internal one is named in its parent's entry or the internal note).
func TestDocListsEveryPackage(t *testing.T) {
	const module = "github.com/kubeharness/kubeharness/harness"
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	// harness/kind is a module of its own, which ./... does not reach.
	if _, err := os.Stat("kind/go.mod"); err == nil {
		pkgs = append(pkgs, module+"/kind")
	}
	for _, pkg := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		top, _, nested := strings.Cut(rel, "/")
		switch {
		case rel == "":
		case top == "internal":
			if !strings.Contains(string(doc), path.Base(rel)) {
				t.Errorf("doc.go does not name the internal package %s", rel)
			}
		case nested:
			if !strings.Contains(string(doc), rel) {
				t.Errorf("doc.go does not name %s in the entry of %s", rel, top)
			}
		case !regexp.MustCompile(`(?m)^//   - ` + regexp.QuoteMeta(rel) + `[: ]`).Match(doc):
			t.Errorf("doc.go has no entry (//   - %s: ...) for harness/%s", rel, rel)
		}
	}
}
