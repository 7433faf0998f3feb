# kubeharness Makefile: thin targets over go tooling and cmd/kubeharness.
# Every tool is pinned in go.mod (`tool` directives) and runs with `go tool`;
# golangci-lint is pinned in hack/tools/go.mod (see lint).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Kubernetes version of the control plane; empty means versions.yaml's default.
# "1.36" (or "1.36.x") means the newest 1.36 patch the Go module proxy serves;
# a leading v is fine, pre-releases are refused.
K8S_VERSION ?=
export K8S_VERSION
# Where a missing etcd, kube-apiserver or kubectl comes from (the environment
# variable, read by kubeharness): auto (default: the official envtest archive,
# sha512-checked, else a build from the Go module proxy), download or build.
# KUBEHARNESS_ENVTEST_INDEX names a mirror of the envtest index (https only,
# unless KUBEHARNESS_ENVTEST_INDEX_INSECURE=1). docs/cli.md.
# Provider the e2e suite runs on.
PROVIDER ?= envtest
export PROVIDER
# Ginkgo label filter, e.g. LABELS=delete-validation or LABELS='!deletion'.
LABELS ?=
# The tier of the e2e suite: fast (make e2e) leaves out the specs labelled
# slow (load, faults on control planes of their own, leader elections,
# whole dev environments, windows that prove something does not happen);
# all (make e2e-all, CI, bench, rbac-audit) runs every spec. Every
# capability keeps specs in the fast tier.
TIER ?= fast
# The fast tier's label filter; bench times the suite with it too.
FAST_FILTER := !slow
E2E_FILTER = $(if $(filter all,$(TIER)),$(LABELS),$(if $(LABELS),($(LABELS)) && )$(FAST_FILTER))
# Ginkgo focus: a regular expression a spec's full text must match, e.g.
# FOCUS='Playbook webhook rejects'; the run report prints it for each failure.
FOCUS ?=
# Runs of the e2e suite, one after another, stopping at the first that
# fails (ginkgo --repeat=REPEAT-1); the run report marks a spec that passed
# in one and failed in another as flaky.
REPEAT ?= 1
# Ginkgo processes of the e2e suite: one control plane and one manager
# serve them all; specs marked Serial run alone at the end. PROCS=1 runs
# the suite in one process.
PROCS ?= $(shell nproc 2>/dev/null || echo 2)
ARTIFACTS ?= $(CURDIR)/artifacts
export ARTIFACTS

KUBEHARNESS := $(CURDIR)/bin/kubeharness
# Sets and exports KUBEBUILDER_ASSETS for the rest of a recipe line: the
# directory etcd, kube-apiserver and kube-controller-manager come from,
# $KUBEBUILDER_ASSETS when set (checked), else what `kubeharness bins` built (it
# builds them first when missing). It is a plain assignment, so with
# .SHELLFLAGS' -e a failing `bins` ends the recipe there, with its own message
# and exit status (`VAR=$$(cmd) command` or `export VAR=$$(cmd)` would not).
WITH_ASSETS = KUBEBUILDER_ASSETS="$$($(KUBEHARNESS) bins --with-controller-manager --with-kubectl --print-dir)"; export KUBEBUILDER_ASSETS;
GINKGO_FLAGS ?= -v --procs=$(PROCS) --timeout=60m --poll-progress-after=60s --junit-report=junit.xml --json-report=report.json --output-dir=$(ARTIFACTS)
# SHARD=k/n runs shard k of n of the suite's specs (kubeharness shard): the
# specs a dry run lists, packed by the times in SHARD_TIMINGS, a previous
# run's Ginkgo JSON report; by default artifacts/timings.json, which every
# whole (unsharded) run of every spec leaves, else an even split by count.
SHARD ?=
# What selects the specs of a run, its dry run's too.
E2E_SELECT = $(if $(E2E_FILTER),--label-filter='$(E2E_FILTER)') $(if $(FOCUS),--focus='$(FOCUS)')
SHARD_TIMINGS ?= $(wildcard $(ARTIFACTS)/timings.json)
# COVER=1 measures the operator's and its webhooks' code the e2e suite
# reaches (docs/testing.md): the manager and the VirtualMachine controller
# are built with -cover and hand their counters over spec by spec
# (harness/coverage), the suite's process is built with -coverpkg too, each
# spec's record is kept in $(SPEC_COVERAGE) (beside report.json), and the
# whole run's coverage is merged into $(ARTIFACTS)/coverage/: a covdata
# directory (go tool covdata percent -i) and coverage.txt (go tool cover
# -html). On envtest the manager and the VirtualMachine controller run as
# those binaries then (KUBEHARNESS_CONTROLLERS=binaries), not in the suite's
# process, whose own counters Go writes only at its exit. What a spec made
# the manager do is its own only while one spec at a time runs against it,
# so COVER=1 runs one Ginkgo process unless PROCS says otherwise (then the
# specs get no record, and AFFECTED runs them all). On kind the manager is
# deployed built with -cover from config/coverage (its counters on a
# PersistentVolumeClaim), stopped before teardown and its counters copied
# out of the node into $(SPEC_COVERAGE)/kind-manager: the run's profile
# has them, the specs' records do not.
COVER ?=
COVERPKG := ./operator/...,./webhook/...
SPEC_COVERAGE = $(ARTIFACTS)/spec-coverage
# The build flags of a binary under COVER=1: Go keeps no coverage of a
# binary whose main package -coverpkg leaves out, so it names cmd/$(1) too.
COVER_BUILD = $(if $(COVER),-cover -covermode=atomic -coverpkg=./cmd/$(1)$(comma)$(COVERPKG))
comma := ,
ifneq ($(COVER),)
ifeq ($(origin PROCS),file)
PROCS := 1
endif
endif
# AFFECTED=REF runs only the specs the changes since REF need (kubeharness
# affected): those whose recorded blocks hold a changed line, those in
# changed spec files, those the record does not know; every spec for a
# change coverage cannot see (config/, CRDs, go.mod, the Makefile, embedded
# files, testdata). Nothing affected runs nothing, and passes. The record
# is COVERAGE's, by default the last COVER=1 run's, made at REF.
AFFECTED ?=
COVERAGE ?= $(SPEC_COVERAGE)
# The packages the suite and the binaries it runs are built from: a Go file
# outside them changes no spec.
AFFECTED_PACKAGES := ./e2e,./cmd/manager,./cmd/vm-controller
# The run's coverage, merged from every directory of the record.
COVER_MERGE = rm -rf $(ARTIFACTS)/coverage && mkdir -p $(ARTIFACTS)/coverage && \
	go tool covdata merge -i="$$(find $(SPEC_COVERAGE) -name 'covmeta.*' -printf '%h\n' | sort -u | paste -sd, -)" -o $(ARTIFACTS)/coverage && \
	go tool covdata textfmt -i $(ARTIFACTS)/coverage -o $(ARTIFACTS)/coverage/coverage.txt && \
	go tool covdata percent -i $(ARTIFACTS)/coverage
# The run report of an e2e run: artifacts/report/index.html, whose command
# to run a failed spec again is this Makefile's.
RUN_REPORT = $(KUBEHARNESS) report --rerun='make e2e-all$(if $(filter-out envtest,$(PROVIDER)), PROVIDER=$(PROVIDER)) FOCUS={{.Focus}}' $(ARTIFACTS)

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m [K8S_VERSION=1.37.1] [LABELS=...]\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST) \
		| sed -e 's|$$(IMG)|$(IMG)|g' -e 's|$$(PROVIDER)|$(PROVIDER)|g' -e 's|$$(PROCS)|$(PROCS)|g' -e 's|$$(KIND_CLUSTER)|$(KIND_CLUSTER)|g' \
		      -e 's|$$(K8S_VERSION)|$(or $(K8S_VERSION),the versions.yaml default)|g' -e 's|$$(KUBECTL)|$(KUBECTL)|g'

##@ Development

# crd:allowDangerousTypes=true lets controller-gen emit float64 fields (as
# type: number); it refuses them otherwise, since floats do not round-trip
# exactly across languages. The only ones are VirtualMachine's
# status.server.usage percentages, which are approximate by nature and
# shown as numbers by `kubectl get vms`; every other field keeps its type.
.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook manifests into config/ from code markers.
	go tool controller-gen rbac:roleName=manager-role crd:allowDangerousTypes=true webhook \
		paths=./operator/api/... paths=./operator/controller/... paths=./operator/certs/... paths=./webhook/... paths=./internal/manager/... \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	@# The VirtualMachine controller is a binary of its own with its own role.
	go tool controller-gen rbac:roleName=vm-controller-role \
		paths=./operator/vm/... paths=./internal/vmcontroller/... \
		output:rbac:artifacts:config=config/vm/rbac
	@# vm-controller --register-crd installs the CRD it was built with.
	cp config/crd/bases/cloudnative.kubeharness.dev_virtualmachines.yaml operator/vm/crd/virtualmachines.yaml

.PHONY: generate
generate: ## Generate DeepCopy methods for the API types, and the VirtualMachine clientset, listers, informers and apply configurations.
	go tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./operator/api/...
	hack/update-codegen.sh

# The programs of the offline kind node image (nodenet, crictl) are a module
# of their own, so that their dependencies stay out of this one's go.mod;
# `./...` stops at its go.mod, so the targets below name it as well.
NODE_MODULE := hack/kind-node
# The Go modules whose packages fmt, vet, lint and test-unit cover: this
# repository's (the operator, its commands and specs), the library's
# (harness/, its own module so that adopting it changes none of a project's
# versions), the kind provider's (harness/kind, its own so that kind's
# dependencies reach only those who use it) and the node image's.
GO_MODULES := . harness harness/kind $(NODE_MODULE)

.PHONY: fmt
fmt: ## Format the code.
	for m in $(GO_MODULES); do (cd $$m && go fmt ./...); done

.PHONY: vet
vet: ## Run go vet.
	for m in $(GO_MODULES); do (cd $$m && go vet ./...); done

# golangci-lint is pinned in a module of its own, hack/tools/go.mod, so its
# dependencies never change the versions this module builds with. The path
# is absolute so that it also runs from $(NODE_MODULE) (where it finds the
# root's .golangci.yml).
GOLANGCI_LINT := go tool -modfile=$(CURDIR)/hack/tools/go.mod golangci-lint

# lint leaves go vet to golangci-lint: its govet runs the analyzers go vet
# runs (and inline), on test files too. Run as well, go vet would type-check
# every dependency from source a second time, for its own facts; what it
# compiles, golangci-lint's package loading compiles the same way, into the
# same Go build cache that the tests then use.
.PHONY: lint
lint: ## Run actionlint on the GitHub workflows and golangci-lint (.golangci.yml, go vet's analyzers among its linters).
	go tool actionlint
	for m in $(GO_MODULES); do (cd $$m && $(GOLANGCI_LINT) run); done

.PHONY: lint-fix
lint-fix: ## Run golangci-lint and apply the fixes it can (formatting, imports, some findings).
	for m in $(GO_MODULES); do (cd $$m && $(GOLANGCI_LINT) run --fix); done

.PHONY: verify
verify: verify-tiers verify-cross ## Fail when generated files, formatting or go.mod files are not what the sources produce, a capability has no fast spec, or the library or the example does not build for Windows or macOS.
	@hack/verify.sh

# The systems besides Linux that the harness library, and a project that
# adopts it, must build on (CI runs their suites there).
CROSS_PLATFORMS := windows/amd64 darwin/arm64
CROSS_MODULES := harness examples/noticeboard

.PHONY: verify-cross
verify-cross: ## Vet the harness module and examples/noticeboard, test files included, for windows/amd64 and darwin/arm64, so that a Linux machine catches a break there first.
	@hack/verify-cross.sh $(CROSS_PLATFORMS) -- $(CROSS_MODULES)

.PHONY: verify-tiers
verify-tiers: ## Fail unless every capability label keeps a spec in the fast tier (a dry run of make e2e's filter).
	@go tool ginkgo --dry-run --silence-skips --label-filter='!slow' ./e2e >/dev/null || \
		{ go tool ginkgo --dry-run --silence-skips --label-filter='!slow' ./e2e 2>&1 | grep -A3 'FAILED' >&2; exit 1; }
	@echo "verify-tiers: every capability has a spec in the fast tier"

.PHONY: test-unit
test-unit: ## Run the unit tests of every Go module (the root, harness, harness/kind, hack/kind-node); harness/envtest's start control planes from bin/k8s or $KUBEBUILDER_ASSETS, and are skipped, saying so, without binaries.
	go test $$(go list ./... | grep -v -e '/e2e$$' -e '/e2e/smoke$$')
	for m in $(filter-out .,$(GO_MODULES)); do (cd $$m && go test ./...); done

# How long each fuzz target runs in `make fuzz` (a duration, or 1000x for a
# count); test-unit runs their seed corpora already.
FUZZTIME ?= 30s
export FUZZTIME

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME (30s) each and print their executions; failing inputs land in <package>/testdata/fuzz/.
	hack/fuzz.sh

.PHONY: test-example
test-example: ## Run the suites of examples/noticeboard, a kubebuilder project outside this module, on `kubeharness bins use` binaries: on harness/envtest, then on controller-runtime's envtest.
	hack/example-test.sh

# The controller-runtime versions the harness module supports: N-2 (what
# harness/go.mod requires; make test-unit tests it), N-1 and N.
HARNESS_WINDOW := v0.23.0 v0.24.1 v0.25.2

.PHONY: test-harness-window
test-harness-window: ## Vet and test the harness module against each controller-runtime of HARNESS_WINDOW (N-2..N) and the k8s.io libraries that go with it, on scratch copies of harness/go.mod.
	$(WITH_ASSETS) hack/harness-window.sh $(HARNESS_WINDOW)

.PHONY: test-adopt
test-adopt: kubeharness ## A project an older kubebuilder scaffolds (hack/kubebuilder: controller-runtime N-1) adopts the harness from a tagged local copy: go get -tool of kubeharness, one import line per suite, its setup-envtest target changed to kubeharness bins use; fails if a version of controller-runtime, k8s.io/*, Ginkgo or Gomega changes or its make test fails.
	$(WITH_ASSETS) hack/adopt-check.sh

.PHONY: bench-procs
bench-procs: kubeharness ## Time `ginkgo -p` at 1, 2 and 4 processes: a kubebuilder scaffold whose plain BeforeSuite starts a plane per process (drop-in and stock) against examples/noticeboard's one shared plane.
	$(WITH_ASSETS) hack/procs-bench.sh

.PHONY: test
test: envtest-bins test-unit e2e-all ## Provide the control-plane binaries (once), then run the unit tests and every spec of the e2e suite on envtest.

.PHONY: e2e
# The run report is made whatever the suite's result, and the suite's exit
# status is the target's: a report that cannot be made fails a run that
# passed, and is printed after a run that failed.
e2e: kubeharness manager vm-controller ## Run the e2e suite on PROVIDER=$(PROVIDER) (envtest, kind or existing) in PROCS=$(PROCS) Ginkgo processes (LABELS, FOCUS, REPEAT, SHARD=k/n with SHARD_TIMINGS, COVER=1, AFFECTED=REF with COVERAGE); the run report at artifacts/report/index.html, JUnit at artifacts/junit.xml, failure bundles in artifacts/failures/.
	@mkdir -p $(ARTIFACTS)
	@echo "e2e: the $(TIER) tier on $(PROVIDER)$(if $(filter all,$(TIER)),, (specs labelled slow left out; make e2e-all runs every spec))$(if $(E2E_FILTER),: --label-filter='$(E2E_FILTER)')"
	@rm -rf $(ARTIFACTS)/report.json $(ARTIFACTS)/attempts
	$(if $(and $(COVER),$(AFFECTED)),@echo "make e2e: COVER=1 with AFFECTED would replace the record with one of the affected specs only; run them apart" >&2; exit 2)
	$(if $(and $(SHARD),$(AFFECTED)),@echo "make e2e: SHARD with AFFECTED is not supported yet; kubeharness affected's library composes with shard (harness/coverage)" >&2; exit 2)
	$(if $(COVER),@rm -rf $(SPEC_COVERAGE) && mkdir -p $(SPEC_COVERAGE)/processes $(SPEC_COVERAGE)/outside)
	$(if $(filter envtest,$(PROVIDER)),$(WITH_ASSETS)) status=0; shard=(); affected=(); \
	$(if $(COVER),export GOCOVERDIR=$(SPEC_COVERAGE)/processes KUBEHARNESS_SPEC_COVERAGE=$(SPEC_COVERAGE) KUBEHARNESS_CONTROLLERS=binaries KUBEHARNESS_KIND_COVERAGE=$(SPEC_COVERAGE)/kind-manager;) \
	$(if $(AFFECTED),[ -d $(COVERAGE)/specs ] || { echo "make e2e AFFECTED=$(AFFECTED): no per-spec coverage record in $(COVERAGE): run make e2e-all COVER=1 at $(AFFECTED) first or name a record with COVERAGE=DIR" >&2; exit 2; }; \
	go tool ginkgo --dry-run --json-report=affected-dry-run.json --output-dir=$(ARTIFACTS) $(E2E_SELECT) ./e2e >$(ARTIFACTS)/affected-dry-run.log 2>&1 \
		|| { cat $(ARTIFACTS)/affected-dry-run.log >&2; echo "make e2e: the dry run that lists the specs to choose from failed (above)" >&2; exit 2; }; \
	args=$$($(KUBEHARNESS) affected --since '$(AFFECTED)' --coverage $(COVERAGE) --report $(ARTIFACTS)/affected-dry-run.json --packages $(AFFECTED_PACKAGES)) || exit 2; \
	mapfile -t affected <<<"$$args";) \
	$(if $(SHARD),go tool ginkgo --dry-run --json-report=shard-dry-run.json --output-dir=$(ARTIFACTS) $(E2E_SELECT) ./e2e >$(ARTIFACTS)/shard-dry-run.log 2>&1 \
		|| { cat $(ARTIFACTS)/shard-dry-run.log >&2; echo "make e2e: the dry run that lists the specs to shard failed (above)" >&2; exit 2; }; \
	args=$$($(KUBEHARNESS) shard --dry-run $(ARTIFACTS)/shard-dry-run.json $(if $(SHARD_TIMINGS),--timings $(SHARD_TIMINGS)) --shard $(SHARD)) || exit 2; \
	mapfile -t shard <<<"$$args";) \
	go tool ginkgo $(GINKGO_FLAGS) $(E2E_SELECT) "$${shard[@]}" "$${affected[@]}" \
		$(if $(filter-out 0 1,$(REPEAT)),--repeat=$$(($(REPEAT) - 1))) \
		$(if $(COVER),--cover --covermode=atomic --coverpkg=$(COVERPKG)) ./e2e \
		$(if $(COVER),-- -test.gocoverdir=$(SPEC_COVERAGE)/outside) || status=$$?; \
	$(if $(COVER),$(COVER_MERGE) || { echo "make e2e: the run's coverage could not be merged (above)" >&2; [ "$$status" != 0 ] || status=1; };) \
	$(if $(SHARD)$(FOCUS)$(LABELS)$(AFFECTED),,$(if $(filter all,$(TIER)),[ ! -f $(ARTIFACTS)/report.json ] || cp $(ARTIFACTS)/report.json $(ARTIFACTS)/timings.json;)) \
	$(RUN_REPORT) || { echo "make e2e: the run report could not be made (above); the suite's exit status: $$status" >&2; [ "$$status" != 0 ] || status=1; }; \
	exit $$status

.PHONY: e2e-all
e2e-all: ## Run every spec of the e2e suite, the slow ones too, on PROVIDER=$(PROVIDER): what CI, make bench and make rbac-audit run.
	@$(MAKE) --no-print-directory e2e TIER=all

.PHONY: test-e2e
test-e2e: e2e ## kubebuilder's name for e2e: the e2e suite on PROVIDER=$(PROVIDER).

# Least privilege, proven: the e2e suite on envtest with every control plane
# it starts recording its requests (KUBEHARNESS_AUDIT_DIR), then the
# requests of the manager's and the VirtualMachine controller's
# ServiceAccounts matched to the rules of config/. Artifacts of its own, so
# that a plain e2e run's stay.
RBAC_AUDIT_ARTIFACTS = $(ARTIFACTS)/rbac-audit

.PHONY: rbac-audit
rbac-audit: kubeharness manager vm-controller ## Run the e2e suite on envtest with API server auditing, print which requests used each RBAC rule and fail on a rule nothing used, a 403 or a wildcard (artifacts/rbac-audit/).
	@rm -rf $(RBAC_AUDIT_ARTIFACTS)/audit
	@mkdir -p $(RBAC_AUDIT_ARTIFACTS)
	KUBEHARNESS_AUDIT_DIR=$(RBAC_AUDIT_ARTIFACTS)/audit $(MAKE) --no-print-directory e2e-all PROVIDER=envtest ARTIFACTS=$(RBAC_AUDIT_ARTIFACTS)
	$(KUBEHARNESS) rbac-audit $(RBAC_AUDIT_ARTIFACTS)/audit | tee $(RBAC_AUDIT_ARTIFACTS)/rbac-audit.txt

.PHONY: envtest-bins
envtest-bins: kubeharness ## Provide etcd, kube-apiserver and kubectl (downloaded, else built: KUBEHARNESS_BINARIES) and kube-controller-manager (built) for K8S_VERSION in bin/k8s/.
	$(KUBEHARNESS) bins --with-controller-manager --with-kubectl

.PHONY: setup-envtest
setup-envtest: envtest-bins ## kubebuilder's name for envtest-bins, for K8S_VERSION=$(K8S_VERSION) (kubeharness bins use works like setup-envtest use).

.PHONY: envtest-up
envtest-up: kubeharness manager vm-controller ## Start a background envtest control plane with the manager and the VirtualMachine controller (driver docker when a Docker daemon answers, else fake; VM_DRIVER forces one), restarted when they exit; kubeconfig and kubectl in .kubeharness/envtest/.
	$(WITH_ASSETS) $(KUBEHARNESS) env up --manager $(CURDIR)/bin/manager --vm-controller $(CURDIR)/bin/vm-controller

.PHONY: envtest-restart
envtest-restart: kubeharness manager vm-controller ## Rebuild the manager and the VirtualMachine controller and restart them in the envtest-up environment.
	$(KUBEHARNESS) env restart manager vm-controller

.PHONY: envtest-down
envtest-down: kubeharness ## Stop everything envtest-up started.
	$(KUBEHARNESS) env down

# Start/stop cycles of the tuned control plane bench checks for failures and
# leaks; CI may run fewer (make bench BENCH_CYCLES=20), 0 skips them.
BENCH_CYCLES ?= 200
# Leaders killed in the leader-election failover benchmark; 0 skips it.
BENCH_LEADER_KILLS ?= 20
# Sections of the benchmark to run (start,cycles,env,leader,suite); empty
# runs all. CI leaves out suite: its make test section times the suite.
BENCH_ONLY ?=
# Parallel suite runs in bench's suite section (after one serial run);
# their failures are counted: specs that interfere with each other show.
BENCH_SUITE_RUNS ?= 5

.PHONY: bench
bench: kubeharness manager vm-controller ## Measure envtest start (tuned against stock), BENCH_CYCLES start/stop cycles checked for leaks, leader failover over BENCH_LEADER_KILLS kills, the e2e suite serial against PROCS processes, BENCH_SUITE_RUNS times, its fast tier against all of it, three shards of it against the whole, and examples/noticeboard's suites stock against drop-in, serial against parallel.
	$(WITH_ASSETS) $(KUBEHARNESS) bench --cycles=$(BENCH_CYCLES) --leader-kills=$(BENCH_LEADER_KILLS) $(if $(BENCH_ONLY),--only=$(BENCH_ONLY)) \
		--suite-procs=$(PROCS) --suite-runs=$(BENCH_SUITE_RUNS) --fast-label-filter='$(FAST_FILTER)' \
		--suite-cmd 'go tool ginkgo --procs=$$PROCS $${LABEL_FILTER:+--label-filter="$$LABEL_FILTER"} --junit-report=junit.xml --output-dir=$(ARTIFACTS)/bench-suite-$$BENCH_RUN ./e2e' \
		--shard-cmd '$(MAKE) --no-print-directory e2e-all SHARD=$$SHARD ARTIFACTS=$$BENCH_OUT $${SHARD_TIMINGS:+SHARD_TIMINGS=$$SHARD_TIMINGS}' \
		--example-cmd 'hack/example-test.sh suites'

##@ kind

# The kind cluster's name; its kubeconfig context is kind-$(KIND_CLUSTER).
KIND_CLUSTER ?= kubeharness
export KIND_CLUSTER
# KIND_OFFLINE=1 skips the stock kindest/node image and uses the offline one;
# KIND_NODE_IMAGE=<image> uses that image as it is.
export KIND_OFFLINE KIND_NODE_IMAGE

.PHONY: kind-node-image
kind-node-image: ## Build the offline kind node image kubeharness/kind-node:v<K8S_VERSION> from the Go module proxy and Debian (needs root and docker).
	hack/kind-node-image.sh

.PHONY: kind-up
kind-up: kubeharness ## Create the kind cluster from kind-config.yaml (stock node image when it can be pulled, else the offline one) and deploy kubeharness.
	$(KUBEHARNESS) kind up

.PHONY: kind-down
kind-down: kubeharness ## Delete the kind cluster.
	$(KUBEHARNESS) kind down

.PHONY: kind-load
kind-load: kubeharness ## Load the manager image $(IMG) into the kind cluster's nodes.
	$(KUBEHARNESS) kind load $(IMG)

.PHONY: deploy
deploy: kubeharness ## Apply config/default with the manager image $(IMG) to the current kubeconfig context.
	$(KUBEHARNESS) deploy --image $(IMG)

.PHONY: undeploy
undeploy: kubeharness ## Delete what deploy applied from the current kubeconfig context.
	$(KUBEHARNESS) undeploy

.PHONY: kind-smoke
kind-smoke: ## Run the smoke specs on the kind cluster: nodes Ready, DNS, a Pod from an image built in the run, a Service across nodes.
	@mkdir -p $(ARTIFACTS)
	go tool ginkgo -v --timeout=15m --junit-report=junit-kind-smoke.xml --json-report=report-kind-smoke.json --output-dir=$(ARTIFACTS) ./e2e/smoke

##@ Deployment

# The kubectl install/uninstall use.
KUBECTL ?= kubectl

.PHONY: install
install: ## Install the CRDs into the current kubeconfig context ($(KUBECTL) apply --server-side).
	go tool kustomize build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: ## Delete the CRDs, and so every Playbook and AppService, from the current kubeconfig context.
	go tool kustomize build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: run
run: manager ## Run the manager against the current kubeconfig context, controllers only (RUN_ARGS adds flags; webhooks need the kubeharness-system namespace and its RBAC, see make deploy).
	bin/manager --disable-webhooks --metrics-bind-address=0 $(RUN_ARGS)

.PHONY: build-installer
build-installer: ## Write dist/install.yaml: config/default with the manager image $(IMG), one file to kubectl apply.
	@mkdir -p dist bin/installer
	@printf 'resources:\n- ../../config/default\nimages:\n- name: kubeharness/manager\n  newName: %s\n  newTag: %s\n' \
		"$(firstword $(subst :, ,$(IMG)))" "$(or $(word 2,$(subst :, ,$(IMG))),latest)" > bin/installer/kustomization.yaml
	go tool kustomize build bin/installer > dist/install.yaml
	@echo "dist/install.yaml: $$(grep -c '^kind:' dist/install.yaml) objects, manager image $(IMG)"

##@ Build

# The manager image, and the VirtualMachine controller's.
IMG ?= kubeharness/manager:dev
VM_IMG ?= kubeharness/vm-controller:dev

.PHONY: build
build: manager kubeharness ## Build the manager and the harness CLI into bin/.

.PHONY: manager
manager: ## Build the manager binary into bin/manager.
	go build $(call COVER_BUILD,manager) -o bin/manager ./cmd/manager

.PHONY: vm-controller
vm-controller: ## Build the VirtualMachine controller binary into bin/vm-controller.
	go build $(call COVER_BUILD,vm-controller) -o bin/vm-controller ./cmd/vm-controller

.PHONY: kubeharness
kubeharness: ## Build the harness CLI into bin/kubeharness.
	@go build -o $(KUBEHARNESS) ./cmd/kubeharness

.PHONY: docker-build
docker-build: ## Build the manager image $(IMG): a static binary on scratch, pulling nothing.
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/image/manager ./cmd/manager
	docker build -t $(IMG) -f Dockerfile bin/image

.PHONY: docker-push
docker-push: ## Push the manager image $(IMG) to its registry.
	docker push $(IMG)

.PHONY: docker-build-vm
docker-build-vm: ## Build the VirtualMachine controller image $(VM_IMG): a static binary on scratch, pulling nothing.
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/images/vm-controller/vm-controller ./cmd/vm-controller
	docker build -t $(VM_IMG) -f cmd/vm-controller/Dockerfile bin/images/vm-controller

.PHONY: docker-up
docker-up: ## Install (from Debian) and start a Docker engine that runs privileged containers and listens with mutual TLS (hack/dockertls) on port 2376 of the kind network's gateway only; safe to repeat.
	hack/docker-up.sh

.PHONY: clean
clean: ## Remove build output and artifacts (keeps the control-plane binaries in bin/k8s).
	rm -rf bin/manager bin/kubeharness bin/vm-controller $(ARTIFACTS)
