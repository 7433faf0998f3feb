package controlplane

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

func TestEtcdListensOnUnixSocketsOnly(t *testing.T) {
	args, err := etcdListenArgs("/tmp/kubeharness-controlplane-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		if !strings.Contains(a, "=unix://") {
			t.Errorf("etcd listens on something but a unix socket: %s", a)
		}
	}
}

// TestEtcdRestartsOnItsSocket starts a control plane in a directory whose
// path is too long for a unix socket's, kills etcd (which leaves its
// socket file behind) and restarts it: etcd listens again and the API
// server reaches it.
func TestEtcdRestartsOnItsSocket(t *testing.T) {
	bins, root, _, err := testbins.Default()
	if err != nil {
		t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name/", 5))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cp, err := Start(Options{BinaryDir: bins, TemplateDir: testbins.TemplateDir(root), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	socket := filepath.Join(cp.Dir(), etcdClientSocket)
	if len(socket) <= maxSocketPath {
		t.Fatalf("%s is short enough for a socket: the test wants a longer one", socket)
	}
	if err := cp.Kill(Etcd); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(socket); err != nil {
		t.Fatalf("no socket file left by the killed etcd (%v): the restart below is to start over one", err)
	}
	if err := cp.Restart(t.Context(), Etcd); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's etcd client reconnects on its own schedule.
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.Config.Host+"/api/v1/namespaces/default", nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("the API server did not read from the restarted etcd: %v", err)
	}
}
