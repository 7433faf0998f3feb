package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

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
	//
	// Slow specs are handed out first (SpecPriority; Ginkgo orders the
	// top-level containers by the highest priority in each): containers of
	// short specs alone then fill the processes' last seconds, rather than
	// one process finishing a 15 s spec while the others wait.
	labelSlow = []any{Label("slow"), SpecPriority(1)}
)

// capabilities are the labels that each keep a spec in the fast tier, so
// that a change that breaks one fails `make e2e`.
var capabilities = []Labels{
	labelPlaybook, labelCerts, labelDeletion, labelDeleteValidation, labelSidecar, labelOvercommit,
	labelAppService, labelTenancy, labelVM, labelRBAC, labelMetrics, labelProviders, labelControlPlane,
	labelEnvtestUp, labelFaults, labelLeaderElection,
}

// fastTier is the label filter of `make e2e` (the Makefile's E2E_FILTER
// without LABELS).
const fastTier = "!slow"

// A dry run of the fast tier (`make verify-tiers`, part of `make verify`)
// fails unless every capability has a spec in it.
var _ = ReportAfterSuite("every capability has a spec in the fast tier", func(r Report) {
	if !r.SuiteConfig.DryRun || r.SuiteConfig.LabelFilter != fastTier {
		return
	}
	have := map[string]bool{}
	for _, s := range r.SpecReports {
		if s.LeafNodeType == types.NodeTypeIt && s.State == types.SpecStatePassed {
			for _, l := range s.Labels() {
				have[l] = true
			}
		}
	}
	var missing []string
	for _, c := range capabilities {
		if !have[c[0]] {
			missing = append(missing, c[0])
		}
	}
	if len(missing) > 0 {
		Fail(fmt.Sprintf("no spec in the fast tier (--label-filter=%q) proves %v: give one spec of each a way to run in about 2 s, without labelSlow", fastTier, missing))
	}
})
