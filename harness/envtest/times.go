package envtest

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kubeharness/kubeharness/harness/controlplane"
)

// EnvTimes names a file to which every tuned Start appends where it spent
// its time: one JSON object per line (StartTimes' JSON form), so that a
// run of many suites, or many Ginkgo processes, can be summed afterwards.
// The file is created 0600 when missing; a symbolic link at the path is
// refused, not followed.
const EnvTimes = "KUBEHARNESS_ENVTEST_TIMES"

// StartTimes is where a tuned Start spent its time.
type StartTimes struct {
	// ControlPlane is starting etcd and kube-apiserver (and
	// kube-controller-manager when asked) until the API server was ready,
	// and provisioning the admin user; ControlPlaneSteps breaks the start
	// down.
	ControlPlane      time.Duration           `json:"-"`
	ControlPlaneSteps controlplane.StartTimes `json:"-"`
	// Install is controller-runtime's install of the CRDs and webhooks on
	// the running plane, including its wait until discovery serves every
	// CRD; CRDs is how many CRDs it installed.
	Install time.Duration `json:"-"`
	CRDs    int           `json:"crds"`
	// Total is the whole Start.
	Total time.Duration `json:"-"`
}

// MarshalJSON writes the durations in seconds.
func (t StartTimes) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ControlPlane float64 `json:"controlPlaneSeconds"`
		Install      float64 `json:"installSeconds"`
		Total        float64 `json:"totalSeconds"`
		CRDs         int     `json:"crds"`
		Steps        string  `json:"controlPlaneSteps"`
	}{t.ControlPlane.Seconds(), t.Install.Seconds(), t.Total.Seconds(), t.CRDs, t.ControlPlaneSteps.String()})
}

func (t StartTimes) String() string {
	return fmt.Sprintf("start %dms: control plane %dms (%s), CRDs (%d) and webhooks installed in %dms",
		t.Total.Milliseconds(), t.ControlPlane.Milliseconds(), t.ControlPlaneSteps, t.CRDs, t.Install.Milliseconds())
}

// startTimes holds each Environment's last tuned start: the struct is
// controller-runtime's, with no field to spare.
var startTimes sync.Map // *Environment -> StartTimes

// StartTimes returns where the last tuned Start of te spent its time; the
// zero StartTimes when te has not started tuned (controller-runtime's own
// Start records none).
func (te *Environment) StartTimes() StartTimes {
	if v, ok := startTimes.Load(te); ok {
		return v.(StartTimes)
	}
	return StartTimes{}
}

// record keeps t as te's last start and appends it to $KUBEHARNESS_ENVTEST_TIMES.
// A file that cannot be written costs the figures, never the start.
func (te *Environment) record(t StartTimes) {
	startTimes.Store(te, t)
	path := os.Getenv(EnvTimes)
	if path == "" {
		return
	}
	line, err := json.Marshal(t)
	if err != nil {
		return
	}
	// Not through a link another user may have planted at path.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|openNoFollow, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %s=%s: %v\n", EnvTimes, path, err)
		return
	}
	_, _ = f.Write(append(line, '\n'))
	_ = f.Close()
}
