package goproxy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestParseKubeGoMod: k8s.io/kubernetes's go.mod yields the etcd it
// requires and its staging modules; one that only the go command's lax
// parsing of dependencies accepts still yields its etcd.
func TestParseKubeGoMod(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		path := filepath.Join(dir, "go.mod")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const gomod = "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.5\n\tk8s.io/client-go v0.0.0\n\tk8s.io/api v0.0.0\n)\n\nreplace (\n\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n\tk8s.io/api => ./staging/src/k8s.io/api\n\texample.com/other => example.com/fork v1.0.0\n)\n"
	v := versions.MustParse("1.37.1")
	m, err := ParseKubeGoMod(write(gomod), v)
	if err != nil {
		t.Fatal(err)
	}
	if m.Etcd != "v3.6.5" || m.StagingErr != nil || !slices.Equal(m.Staging, []string{"k8s.io/api", "k8s.io/client-go"}) {
		t.Errorf("ParseKubeGoMod = etcd %q, staging %q, %v", m.Etcd, m.Staging, m.StagingErr)
	}
	m, err = ParseKubeGoMod(write(gomod+"\nfuturedirective x\n"), v)
	if err != nil {
		t.Fatal(err)
	}
	if m.Etcd != "v3.6.5" || m.StagingErr == nil {
		t.Errorf("with an unknown directive: etcd %q, staging error %v; want v3.6.5 and an error", m.Etcd, m.StagingErr)
	}
	if _, err := ParseKubeGoMod(filepath.Join(dir, "missing"), v); err == nil || !strings.Contains(err.Error(), "reading go.mod of Kubernetes 1.37.1") {
		t.Errorf("missing go.mod: %v", err)
	}
}

// TestUnreachable: a version the proxy refuses is not listed; a
// proxy that cannot be asked is an error, not an absent version.
func TestUnreachable(t *testing.T) {
	for msg, want := range map[string]bool{
		"go: k8s.io/kubernetes@v9.99.0: reading https://proxy.golang.org/k8s.io/kubernetes/@v/v9.99.0.info: 403 Forbidden": false,
		"go: k8s.io/kubernetes@v1.37.9: invalid version: unknown revision v1.37.9":                                         false,
		"go: module lookup disabled by GOPROXY=off":                                                                        true,
		"dial tcp: lookup proxy.golang.org: no such host":                                                                  true,
	} {
		if got := Unreachable(msg); got != want {
			t.Errorf("Unreachable(%q) = %v, want %v", msg, got, want)
		}
	}
}
