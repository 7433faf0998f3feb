package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/clihint"
)

// DefaultControllers are the kube-controller-manager controllers the
// harness runs on envtest: owner-reference garbage collection, namespace
// finalization and Deployment rollout to ReplicaSets and Pods.
var DefaultControllers = []string{"garbagecollector", "namespace", "deployment", "replicaset"}

// controllerManager is kube-controller-manager with the admin identity
// and only the controllers asked for (Options.Controllers), so that the
// control plane deletes dependents, finalizes namespaces and rolls out
// Deployments as a cluster does.
type controllerManager struct {
	proc
	// path is the binary, kubeconfig the admin's.
	path, kubeconfig string
	controllers      []string
	out              io.Writer
}

func (*controllerManager) name() Component { return ControllerManager }

func (m *controllerManager) start() error {
	if _, err := os.Stat(m.path); err != nil {
		return fmt.Errorf("kube-controller-manager not found in %s: provide it with `kubeharness bins use VERSION --with-controller-manager` (the envtest archive has none); %s", filepath.Dir(m.path), clihint.Get())
	}
	return m.run(command(m.out, m.path,
		"--kubeconfig="+m.kubeconfig,
		"--controllers="+strings.Join(m.controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--concurrent-gc-syncs=5",
	))
}

// ready returns at once: the controllers' informers sync in the
// background, and callers wait for the effects they need.
func (*controllerManager) ready(context.Context) error { return nil }

func (*controllerManager) stopGrace() time.Duration { return 0 }
