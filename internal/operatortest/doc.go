// Package operatortest brings up this repository's operator for its tests and
// dev environment: its providers (envtest, kind, existing) are
// harness/cluster Providers whose clusters run the manager and offer it as
// the ability *Operator, and StartLocal is the one start-up path the
// envtest provider, `kubeharness env up` and `kubeharness bench` share.
// Around them: tenants, waits and the operator's part of failure bundles;
// putting the operator on a cluster is internal/deploy's, and
// docs/architecture.md says where everything else lives.
package operatortest
