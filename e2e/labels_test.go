package e2e

import . "github.com/onsi/ginkgo/v2"

// The suite's labels, held here so that a filter (make e2e LABELS=…) and
// the specs spell them alike. Every spec carries the label of each
// capability it proves; `ginkgo labels ./e2e` lists them.
var (
	labelAppService       = Label("appservice")
	labelCerts            = Label("certs")
	labelControlPlane     = Label("controlplane")
	labelDeleteValidation = Label("delete-validation")
	labelDeletion         = Label("deletion")
	labelEnvtestUp        = Label("envtest-up")
	labelFaults           = Label("faults")
	labelLeaderElection   = Label("leader-election")
	labelLoad             = Label("load")
	labelMetrics          = Label("metrics")
	labelOvercommit       = Label("overcommit")
	labelPlaybook         = Label("playbook")
	labelProviders        = Label("providers")
	labelRBAC             = Label("rbac")
	labelRotation         = Label("rotation")
	labelSecrets          = Label("secrets")
	labelSidecar          = Label("sidecar")
	labelStorage          = Label("storage")
	labelTenancy          = Label("tenancy")
	labelVM               = Label("vm")
)

// Where a spec can run.
var (
	// labelCluster: real nodes only (kind, existing clusters); skipped on
	// envtest.
	labelCluster = Label("cluster")
	// labelDocker: needs a Docker daemon (VM_DRIVER=docker, or kind).
	labelDocker = Label("docker")
	// labelEnvtestOnly: needs what only envtest gives (a control plane of
	// the suite's own to break, the manager in this process).
	labelEnvtestOnly = Label("envtest-only")
)

// The tiers. `make e2e` runs the fast tier: every spec not labelled slow.
// `make e2e-all` (CI, make bench, make rbac-audit) runs every spec.
var (
	// labelSlow marks a spec whose own work takes more than about 2 s on
	// 2 cores: load, faults on a control plane of its own, windows that
	// prove something does not happen, start-ups of whole environments.
	// Every capability keeps at least one spec without it.
	labelSlow = Label("slow")
)
