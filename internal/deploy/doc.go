// Package deploy puts this repository's operator on a cluster from
// config/, rendered with kustomize's Go API: onto a control plane that runs
// no Pods, calling a webhook server on this machine (Install), or as
// config/default's Deployment and config/vm's VirtualMachine controller
// onto a cluster with nodes (Deploy, DeployVMController, ToKind for kind,
// with the images built here); and it waits until they serve. The
// identities the operator runs as (ImpersonateManager,
// ImpersonateVMController) are its too.
package deploy
