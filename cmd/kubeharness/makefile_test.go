package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestMakeE2EReportsWhateverTheSuiteResult runs `make e2e` with a
// recorded `go tool ginkgo` that exits with a given status after writing a
// given report: the run report is made either way, the target's exit
// status is the suite's, and a report that cannot be made fails a run that
// passed and shows after one that failed.
func TestMakeE2EReportsWhateverTheSuiteResult(t *testing.T) {
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
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := filepath.Abs(filepath.Join("..", "..", "harness", "report", "testdata", "runs", "one", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		status     int  // of ginkgo
		report     bool // ginkgo writes report.json
		wantStatus string
		wantStderr string
	}{
		{name: "a failed suite with its report", status: 3, report: true, wantStatus: "Error 3"},
		{name: "a passed suite without a report", status: 0, wantStatus: "Error 1", wantStderr: "no Ginkgo JSON report at"},
		{name: "a failed suite without a report", status: 1, wantStatus: "Error 1", wantStderr: "the suite's exit status: 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			artifacts := filepath.Join(tmp, "artifacts")
			args := filepath.Join(tmp, "ginkgo-args")
			bin := filepath.Join(tmp, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			write := ""
			if tc.report {
				write = `cp "` + recorded + `" "$ARTIFACTS/report.json"; `
			}
			writeScript(t, filepath.Join(bin, "go"), `if [ "$1 $2" = "tool ginkgo" ]; then printf '%s\n' "$@" >"`+args+`"; `+write+`exit `+strconv.Itoa(tc.status)+`; fi
exec "`+realGo+`" "$@"`)
			kubeharness := filepath.Join(tmp, "kubeharness")
			writeScript(t, kubeharness, asKubeharness+`=1 exec "`+self+`" "$@"`)
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "PATH=") {
					env = append(env, kv)
				}
			}
			env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOPROXY=off")
			// A stale report of an earlier run must not stand in for this one.
			if err := os.MkdirAll(artifacts, 0o755); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(recorded)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(artifacts, "report.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command("make", "--no-print-directory", "-C", root, "-o", "kubeharness", "-o", "manager", "-o", "vm-controller",
				"KUBEHARNESS="+kubeharness, "PROVIDER=existing", "ARTIFACTS="+artifacts, "FOCUS=rejects a widget", "REPEAT=3", "e2e")
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err == nil {
				t.Fatalf("make e2e succeeded; want it to fail\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), "] "+tc.wantStatus) || !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("make e2e: stderr\n%s\nwant %q and %q", stderr.String(), tc.wantStatus, tc.wantStderr)
			}
			index := filepath.Join(artifacts, "report", "index.html")
			_, statErr := os.Stat(index)
			if tc.report && (statErr != nil || !strings.Contains(stdout.String(), index)) {
				t.Errorf("make e2e made no report at %s (%v), or did not print its path:\n%s", index, statErr, stdout.String())
			}
			if !tc.report && statErr == nil {
				t.Errorf("make e2e made %s of a run that wrote no report.json", index)
			}
			got, err := os.ReadFile(args)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"--json-report=report.json", "--focus=rejects a widget", "--repeat=2"} {
				if !strings.Contains("\n"+string(got), "\n"+want+"\n") {
					t.Errorf("ginkgo ran without %s:\n%s", want, got)
				}
			}
		})
	}
}
