package main

import (
	"os"
	"path/filepath"
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

// TestEnvRefusesADirectoryItDidNotMake: env down and env up --state-dir
// refuse a directory env up did not make, saying so, and remove nothing
// in it (as --state-dir / would lose /run).
func TestEnvRefusesADirectoryItDidNotMake(t *testing.T) {
	for _, args := range [][]string{{"env", "down"}, {"env", "up", "--manager", "/nonexistent/manager"}} {
		t.Run(args[1], func(t *testing.T) {
			dir := t.TempDir()
			sentinels := []string{filepath.Join(dir, "run", "x"), filepath.Join(dir, "kubeconfig")}
			if err := os.Mkdir(filepath.Join(dir, "run"), 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range sentinels {
				if err := os.WriteFile(f, []byte("keep"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, errOut, code := kubeharness(t, append(args, "--state-dir", dir)...)
			if code != 1 || !strings.Contains(errOut, "is not a state directory kubeharness made") || !strings.Contains(errOut, "pass --state-dir") {
				t.Errorf("kubeharness %s --state-dir DIR: exit status %d, stderr %q; want 1 and a refusal saying what to pass", strings.Join(args, " "), code, errOut)
			}
			for _, f := range sentinels {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("kubeharness %s removed %s: %v", strings.Join(args, " "), f, err)
				}
			}
		})
	}
}
