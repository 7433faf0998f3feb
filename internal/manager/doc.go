// Package manager wires the kubeharness operator and webhooks into one
// controller-runtime Manager: its Options and flags, the Scheme of every type
// it handles, the namespace it runs in, its leader-election Lease and the
// webhook readiness canary. cmd/manager is the thin binary over it; the e2e
// harness and cmd/kubeharness run it in-process.
package manager
