package controlplane

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// TestComponentFaults starts a control plane with kube-controller-manager
// and breaks each component in turn: Kill leaves it exited (Exited says
// so), Restart brings it back ready with a new process, Pause and Resume
// freeze and continue it; a component it does not run is refused; Stop
// then leaves no process of them running.
func TestComponentFaults(t *testing.T) {
	dir, root, _, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	cp, err := Start(Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root), Controllers: DefaultControllers})
	if err != nil {
		if strings.Contains(err.Error(), "kube-controller-manager not found") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	want := []string{string(Etcd), string(APIServer), string(ControllerManager)}
	if got := slices.Sorted(maps.Keys(cp.PIDs())); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("PIDs %v, want %v", got, want)
	}
	for _, comp := range []Component{ControllerManager, Etcd, APIServer} {
		before := cp.PIDs()[string(comp)]
		if err := cp.Pause(comp); err != nil {
			t.Fatalf("Pause(%s): %v", comp, err)
		}
		if err := cp.Resume(comp); err != nil {
			t.Fatalf("Resume(%s): %v", comp, err)
		}
		if err := cp.Kill(comp); err != nil {
			t.Fatalf("Kill(%s): %v", comp, err)
		}
		if err := cp.Exited(); err == nil || !strings.Contains(err.Error(), string(comp)) {
			t.Errorf("Exited after Kill(%s): %v", comp, err)
		}
		if err := cp.Kill(comp); err == nil {
			t.Errorf("Kill(%s) of a killed process: no error", comp)
		}
		if err := cp.Restart(t.Context(), comp); err != nil {
			t.Fatalf("Restart(%s): %v", comp, err)
		}
		if after := cp.PIDs()[string(comp)]; after == before || after == 0 {
			t.Errorf("%s: pid %d before, %d after its restart", comp, before, after)
		}
		if err := cp.Exited(); err != nil {
			t.Errorf("Exited after Restart(%s): %v", comp, err)
		}
	}
	if err := cp.Kill("kube-scheduler"); err == nil || !strings.Contains(err.Error(), `"kube-scheduler" does not run in this control plane, which runs etcd, kube-apiserver, kube-controller-manager`) {
		t.Errorf("Kill(kube-scheduler): %v", err)
	}
	procs := cp.running()
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, p := range procs {
		if p.State() == nil {
			t.Errorf("%s (pid %d) runs after Stop", name, p.Pid())
		}
	}
}

// TestComponentsNotStarted: a component the plane did not start is
// named as such.
func TestComponentsNotStarted(t *testing.T) {
	var cp ControlPlane
	if err := cp.Kill(ControllerManager); err == nil || !strings.Contains(err.Error(), "does not run in this control plane") {
		t.Errorf("Kill(%s) without it: %v", ControllerManager, err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("Stop of a plane that never started: %v", err)
	}
}
