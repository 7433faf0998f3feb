// Package app wires the kubeharness operator and webhooks into one
// controller-runtime Manager; cmd/manager and the e2e harness both use it.
package app
