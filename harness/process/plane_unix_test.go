//go:build unix

package process_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
	"github.com/kubeharness/kubeharness/harness/process"
)

// planeGoneWithin is how soon after a test process is killed none of its
// control plane's processes may be left.
const planeGoneWithin = 2 * time.Second

// killedPlane is what the "plane" helper prints once its control plane
// runs: the processes, by component, and the directories it made.
type killedPlane struct {
	PIDs map[string]int
	Dirs []string
}

func init() {
	// plane starts a tuned control plane, with kube-controller-manager
	// when the binaries have one, prints a killedPlane and waits to be
	// killed: a test process with a control plane.
	helpers["plane"] = func() {
		dir, root, _, err := testbins.Default()
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		o := controlplane.Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root)}
		if _, err := os.Stat(filepath.Join(dir, "kube-controller-manager")); err == nil {
			o.Controllers = []string{"namespace"}
		}
		cp, err := controlplane.Start(o)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		line, _ := json.Marshal(killedPlane{PIDs: cp.PIDs(), Dirs: []string{cp.Dir(), cp.EtcdDataDir}})
		fmt.Println(string(line))
		for {
			time.Sleep(time.Hour) // until the test kills this process
		}
	}
}

// TestNoPlaneProcessOutlivesAKilledTest SIGKILLs a test process (this
// binary as the "plane" helper) that runs a tuned control plane, and finds
// none of the plane's processes, nor their watchdogs, left within
// planeGoneWithin: through Linux's parent-death signal, and through the
// watchdog that macOS relies on.
func TestNoPlaneProcessOutlivesAKilledTest(t *testing.T) {
	if _, _, _, err := testbins.Default(); err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range deathModes {
		t.Run(mode.name, func(t *testing.T) {
			helper, line := proctest.StartReading(t, process.Command{Path: exe, Env: append([]string{helperEnv + "=plane"}, mode.env...)})
			var plane killedPlane
			if err := json.Unmarshal([]byte(line), &plane); err != nil || len(plane.PIDs) < 2 {
				t.Fatalf("the helper's control plane did not start: %s", line)
			}
			// What a killed plane leaves on disk is the test's to remove.
			t.Cleanup(func() {
				for _, d := range plane.Dirs {
					_ = os.RemoveAll(d)
				}
			})
			// Each process, and each watchdog: the leader of a group that
			// the process does not lead.
			procs := map[int]string{}
			for name, pid := range plane.PIDs {
				procs[pid] = name
				pgid, err := unix.Getpgid(pid)
				if err != nil {
					t.Fatalf("%s (pid %d) is not running: %v", name, pid, err)
				}
				if pgid != pid {
					procs[pgid] = "the watchdog of " + name
				} else if mode.env != nil {
					t.Errorf("%s (pid %d) leads its group: with %s it has no watchdog", name, pid, mode.env[0])
				}
			}
			t.Logf("the helper (pid %d) runs %v", helper.Pid(), procs)
			if err := helper.Kill(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(planeGoneWithin)
			for pid, what := range procs {
				if !process.WaitGone(pid, time.Until(deadline)) {
					t.Errorf("%s (pid %d) is still there %s after the helper was killed", what, pid, planeGoneWithin)
				}
			}
		})
	}
}
