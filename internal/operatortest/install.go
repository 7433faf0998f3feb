package operatortest

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/scheme"
)

// NewEnvtest is harness/cluster's Envtest for a control plane of o with
// this operator's CRDs (config/crd/bases below root) installed, and
// clients with its scheme.
func NewEnvtest(root string, o controlplane.Options) *cluster.Envtest {
	return &cluster.Envtest{Options: o, CRDDirectoryPaths: []string{crdDir(root)}, Scheme: scheme.New()}
}

// InstallCRDs installs the CRDs from config/crd/bases below root and waits
// until they are served.
func InstallCRDs(cfg *rest.Config, root string) error {
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{crdDir(root)}, ErrorIfPathMissing: true,
	}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// crdDir is where the operator's CRDs are below root.
func crdDir(root string) string { return filepath.Join(root, "config", "crd", "bases") }

// InstallLocal installs kubeharness into cp for a manager that runs on this
// machine: it picks a free port for the webhook server, installs config/rbac
// and config/webhook calling https://127.0.0.1:<port>, and returns an admin
// client and that port.
func InstallLocal(ctx context.Context, c client.Client, root string) (int, error) {
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return 0, err
	}
	if err := deploy.Install(ctx, c, deploy.InstallOptions{Root: root, WebhookURL: fmt.Sprintf("https://127.0.0.1:%d", ports[0]), Scheme: c.Scheme()}); err != nil {
		return 0, err
	}
	return ports[0], nil
}
