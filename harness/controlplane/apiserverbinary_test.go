package controlplane

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAPIServerBinary: a tuned start runs kube-apiserver-test when the
// directory holds it, executable, unless asked for the plain one.
func TestAPIServerBinary(t *testing.T) {
	dir := t.TempDir()
	if got := APIServerBinary(dir, Options{}); got != "kube-apiserver" {
		t.Errorf("without kube-apiserver-test: %s", got)
	}
	test := filepath.Join(dir, "kube-apiserver-test")
	if err := os.WriteFile(test, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := APIServerBinary(dir, Options{}); got != "kube-apiserver" {
		t.Errorf("with a kube-apiserver-test that is not executable: %s", got)
	}
	if err := os.Chmod(test, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := APIServerBinary(dir, Options{}); got != "kube-apiserver-test" {
		t.Errorf("with kube-apiserver-test: %s", got)
	}
	if got := APIServerBinary(dir, Options{PlainAPIServer: true}); got != "kube-apiserver" {
		t.Errorf("PlainAPIServer: %s", got)
	}
}
