//go:build unix

package envtest_test

import "testing"

// tunedOnly marks a test of what only the tuned control plane does; it
// runs here.
func tunedOnly(*testing.T) {}
