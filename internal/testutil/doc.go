// Package testutil holds object builders for kubeharness tests, and the
// second local user tests that play another user on the machine need.
package testutil
