// Package manager wires the kubeharness operator and webhooks into one
// controller-runtime Manager: its Options and flags, the namespace it runs
// in, its leader-election Lease and the webhook readiness canary; its scheme
// is internal/scheme's. cmd/manager is the thin binary over it; the e2e
// harness and cmd/kubeharness run it in-process.
package manager
