// Package e2e holds the kubeharness Ginkgo specs. They run on the provider
// $PROVIDER selects (envtest by default, kind or existing; see internal/testenv)
// and are labelled by capability: playbook, deletion, delete-validation,
// certs, rotation, rbac, tenancy, appservice, sidecar, overcommit, metrics,
// envtest-up, controlplane, cluster (real nodes only), leader-election,
// providers and envtest-only.
package e2e
