package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// asKubeharness makes the test binary run as kubeharness itself.
const asKubeharness = "KUBEHARNESS_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asKubeharness) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestMakeStopsAtTheBinariesError runs the Makefile's targets that need the
// control-plane binaries with a version that cannot be built: each must
// stop at `kubeharness bins`, print its error first and exit non-zero,
// never running the next step with an empty KUBEBUILDER_ASSETS. The next
// steps are recorded instead of run: `go tool ginkgo` by a go wrapper that
// succeeds (the worst case), other kubeharness commands by a kubeharness
// wrapper running this test binary as kubeharness. GOPROXY=off keeps the Go module proxy out of it.
func TestMakeStopsAtTheBinariesError(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(tmp, "ran.log")
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(bin, "go"), `if [ "$1 $2" = "tool ginkgo" ]; then echo "go tool ginkgo" >>"`+ran+`"; exit 0; fi
exec "`+realGo+`" "$@"`)
	kubeharness := filepath.Join(tmp, "kubeharness")
	writeScript(t, kubeharness, `echo "kubeharness $1" >>"`+ran+`"
`+asKubeharness+`=1 exec "`+self+`" "$@"`)

	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") && !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOPROXY=off")

	for _, target := range []string{"e2e", "envtest-up", "bench"} {
		t.Run(target, func(t *testing.T) {
			_ = os.Remove(ran)
			// -o: the manager and the CLI count as built.
			cmd := exec.Command("make", "--no-print-directory", "-C", root, "-o", "kubeharness", "-o", "manager",
				"KUBEHARNESS="+kubeharness, "K8S_VERSION=9.99", "PROVIDER=envtest", "ARTIFACTS="+filepath.Join(tmp, "artifacts"), target)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Errorf("make %s K8S_VERSION=9.99 succeeded; stderr:\n%s", target, stderr.String())
			}
			first := ""
			for _, line := range strings.Split(stderr.String(), "\n") {
				if strings.HasPrefix(line, "kubeharness ") || strings.HasPrefix(line, "make: ***") {
					first = line
					break
				}
			}
			if !strings.HasPrefix(first, "kubeharness bins: K8S_VERSION=9.99") {
				t.Errorf("make %s: the first error is %q, want the version error of kubeharness bins; stderr:\n%s", target, first, stderr.String())
			}
			log, _ := os.ReadFile(ran)
			if got := strings.TrimSpace(string(log)); got != "kubeharness bins" {
				t.Errorf("make %s ran %q after the failed build; want only `kubeharness bins`", target, got)
			}
		})
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
