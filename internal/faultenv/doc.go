// Package faultenv is where this repository's operator meets failure on
// purpose: a FaultEnv (a control plane and manager of a spec's own, behind
// harness/faults' proxy, whose processes the spec kills, restarts and
// pauses), the loads that run through it (a Workload of Playbooks and
// Pods, a ConflictStorm of writers, an AdmissionProbe), and the leader
// failover benchmark (RunLeaderFire) that `kubeharness bench` and the
// fault specs share.
package faultenv
