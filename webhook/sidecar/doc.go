// Package sidecar implements the mutating webhook that injects the
// kubeharness init container and sidecar container into new Pods.
package sidecar
