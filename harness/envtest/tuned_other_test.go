//go:build !unix

package envtest_test

import "testing"

// tunedOnly skips a test of what only the tuned control plane does: here
// Start is controller-runtime's (envtest_other.go).
func tunedOnly(t *testing.T) {
	t.Helper()
	t.Skip("the tuned control plane needs a Unix system; on this one Start is controller-runtime's")
}
