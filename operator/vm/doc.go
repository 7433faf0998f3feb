// Package vm is the VirtualMachine controller, written the client-go way
// of k8s.io/sample-controller rather than with controller-runtime: a
// generated typed clientset, a shared informer and its lister, a
// rate-limited workqueue of namespace/name keys and workers running
// syncHandler. Each VirtualMachine becomes a server of a driver (package
// driver: Docker containers, or an in-memory fake) that runs while the
// VirtualMachine exists; a finalizer removes it before the VirtualMachine
// goes. The status reports the phase (Creating, Active, Failed,
// Terminating), the server's id and state, and its CPU and memory use,
// read every UsageRefresh and written only when it changed.
//
// RegisterCRD installs or upgrades the CustomResourceDefinition from the
// copy embedded here (generated from config/crd/bases), for a controller
// started with --register-crd.
package vm
