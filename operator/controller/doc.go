// Package controller holds the controller-runtime reconcilers of the
// kubeharness operator, one <kind>_controller.go each.
package controller
