// Package devenv is the background dev environment behind `kubeharness env
// up` (make envtest-up): a control plane with this repository's manager and
// VirtualMachine controller running as processes against it, brought up as
// the e2e suite brings up its own (operatortest.StartLocal), and a kubectl of
// the same version. A supervisor in a session of its own (Serve) outlives
// the command that started it and restarts a component that exits; Down,
// Status and Restart talk to it through the state directory (state.go),
// which must be one env up made (statedir.go).
package devenv
