package main

import (
	"strings"
	"testing"
)

// TestEnvServeTakesWhatUpPasses: the hidden env serve accepts the flags
// devenv.Up appends to its command line (--version, --manager,
// --vm-controller, --vm-driver, --state-dir), and refuses to run as a
// command of its own, without the lock up hands it.
func TestEnvServeTakesWhatUpPasses(t *testing.T) {
	_, errOut, code := kubeharness(t, "env", "serve", "--version", "1.37.1", "--manager", "/m", "--vm-controller", "/v",
		"--vm-driver", "fake", "--state-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "env serve holds no lock") {
		t.Errorf("env serve without the lock: exit status %d, stderr %q; want 1 and that it holds no lock", code, errOut)
	}
}
