package harness_test

import (
	"os/exec"
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
