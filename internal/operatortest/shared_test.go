package operatortest

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm"
)

// The parallel suite's first process shares the cluster with the others:
// only harness/suite's handle crosses Ginkgo's loopback endpoint, and the
// file it names, which holds the admin's key, is readable by this user
// only.
func TestShareWritesThePrivateFileAndPassesOnlyAHandle(t *testing.T) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nadmin key\n-----END EC PRIVATE KEY-----\n")
	op := &Operator{Deployment: Deployment{WebhookAddr: "127.0.0.1:9443", ManagerLogFile: "/tmp/manager.log", VMDriver: "fake"},
		CertOptions: certs.Options{Namespace: "ns", ExtraIPs: []net.IP{net.IPv4(127, 0, 0, 1)}, ForbiddenRetry: time.Second, Canary: func() error { return nil }},
		VMOptions: vm.Options{DefaultImage: "vm:dev", OrphanSweep: time.Minute, MaxCPU: resource.MustParse("2"),
			RateLimiter: workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()}}
	c := &cluster.Cluster{Provider: "envtest", Config: &rest.Config{
		Host:            "https://127.0.0.1:6443",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("admin cert"), KeyData: key},
	}, Abilities: []any{KindNodes{Name: "dev"}, op}}
	shared, remove, err := ShareCluster(c, "http://127.0.0.1:1234", "fake-token")
	if err != nil {
		t.Fatal(err)
	}
	// kubeharness-share/v1 <token> <path>
	fields := strings.SplitN(shared, " ", 3)
	if len(fields) != 3 || bytes.Contains([]byte(shared), key) || strings.ContainsAny(shared, "\n{") {
		t.Fatalf("Share returned %q: only harness/suite's handle may cross to the other processes", shared)
	}
	path := fields[2]
	dir := filepath.Dir(path)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	for _, want := range []struct {
		path string
		mode os.FileMode
	}{{dir, os.ModeDir | 0o700}, {path, 0o600}} {
		fi, err := os.Lstat(want.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want.mode {
			t.Errorf("%s has mode %s, want %s", want.path, fi.Mode(), want.mode)
		}
	}
	s, err := readShared(shared)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(s.Kubeconfig))
	if err != nil || !bytes.Equal(cfg.KeyData, key) || cfg.Host != c.Config.Host || s.Operator == nil || s.Operator.FakeVMsToken != "fake-token" {
		t.Errorf("the shared file does not carry the connection details (%v): %+v", err, s)
	}
	// The operator's settings cross whole, but for the functions and
	// objects of the first process.
	wantCerts := op.CertOptions
	wantCerts.Canary = nil
	if got := s.Operator.CertOptions; got.Canary != nil || !reflect.DeepEqual(got, wantCerts) {
		t.Errorf("the certificate settings crossed as %+v, want %+v", got, wantCerts)
	}
	if got := s.Operator.VMOptions; got.RateLimiter != nil || got.DefaultImage != "vm:dev" || got.OrphanSweep != time.Minute || !got.MaxCPU.Equal(op.VMOptions.MaxCPU) {
		t.Errorf("the VirtualMachine controller's settings crossed as %+v, want %+v without the rate limiter", got, op.VMOptions)
	}
	if abilities, err := decodeAbilities(s.Abilities); s.Operator == nil || s.Operator.Deployment != op.Deployment || err != nil || len(abilities) != 1 || abilities[0] != (KindNodes{Name: "dev"}) {
		t.Errorf("the shared file carries the operator %+v and abilities %v (%v); want %+v and [{dev}]", s.Operator, abilities, err, op.Deployment)
	}

	// A file others could read is refused, whoever made it.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readShared(shared); err == nil || !strings.Contains(err.Error(), "must have mode -rw-------") {
		t.Errorf("readShared of a 0644 file: %v, want a refusal naming the mode", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := readShared(shared); err == nil || !strings.Contains(err.Error(), "must have mode drwx------") {
		t.Errorf("readShared in a 0755 directory: %v, want a refusal naming the mode", err)
	}

	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("remove left %s: %v", dir, err)
	}
}
