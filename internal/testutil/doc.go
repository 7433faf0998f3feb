// Package testutil holds object builders for kubeharness tests.
package testutil
