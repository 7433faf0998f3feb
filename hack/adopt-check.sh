#!/usr/bin/env bash
# Adopting the harness changes none of a project's versions: a project
# scaffolded by an older kubebuilder (hack/kubebuilder pins v4.15.0, whose
# scaffold requires controller-runtime v0.24.1) gets an API, a controller
# and a webhook, generated as kubebuilder generates them. Then its two
# suites switch one import line each to harness/envtest, the harness module
# is required (through a replace to this checkout: it is not published from
# here), and `go mod tidy` runs. The versions of controller-runtime, every
# k8s.io module, Ginkgo and Gomega (go list -m all) must be the same before
# and after, and the suites must pass on the drop-in.
#
# Usage: hack/adopt-check.sh   (make test-adopt)
# Environment:
#   KUBEBUILDER_ASSETS  the control-plane binaries (make test-adopt sets it
#                       from `kubeharness bins use`)
#   ADOPT_DIR           where the project is generated (default: a new
#                       temporary directory, removed afterwards)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log() { printf '[adopt %4ds] %s\n' "$SECONDS" "$*"; }

: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS to the control-plane binaries, e.g. \$(bin/kubeharness bins use -p path)}"
export KUBEBUILDER_ASSETS
if [ -n "${ADOPT_DIR:-}" ]; then
  work=$ADOPT_DIR
  rm -rf "$work/project"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/project"
cd "$work/project"

kubebuilder=$(cd "$root/hack/kubebuilder" && go tool -n kubebuilder)
kbversion=$(cd "$root/hack/kubebuilder" && go list -m -f '{{.Version}}' sigs.k8s.io/kubebuilder/v4)
log "scaffolding with kubebuilder $kbversion in $work/project"
"$kubebuilder" init --domain example.com --repo example.com/frigates >"$work/scaffold.log" 2>&1 &&
  "$kubebuilder" create api --group ships --version v1 --kind Frigate --resource --controller >>"$work/scaffold.log" 2>&1 &&
  "$kubebuilder" create webhook --group ships --version v1 --kind Frigate --defaulting --programmatic-validation >>"$work/scaffold.log" 2>&1 &&
  make manifests >>"$work/scaffold.log" 2>&1 ||
  { cat "$work/scaffold.log" >&2; echo "adopt: kubebuilder $kbversion could not scaffold the project (above)" >&2; exit 1; }

# The versions an adopter must keep.
versions() {
  go list -m -f '{{.Path}} {{.Version}}' all |
    grep -E '^(sigs\.k8s\.io/controller-runtime|k8s\.io/[^ ]+|github\.com/onsi/ginkgo/v2|github\.com/onsi/gomega) ' | sort
}
versions >"$work/before.txt"
log "before: $(grep -E 'controller-runtime|k8s.io/api |ginkgo|gomega ' "$work/before.txt" | tr '\n' ' ')"

suites=(internal/controller/suite_test.go internal/webhook/v1/webhook_suite_test.go)
for f in "${suites[@]}"; do
  grep -q '"sigs.k8s.io/controller-runtime/pkg/envtest"' "$f" ||
    { echo "adopt: $f does not import controller-runtime's envtest; has kubebuilder's scaffold changed?" >&2; exit 1; }
  sed -i 's#"sigs.k8s.io/controller-runtime/pkg/envtest"#"github.com/kubeharness/kubeharness/harness/envtest"#' "$f"
done
go mod edit -require=github.com/kubeharness/kubeharness/harness@v0.0.0-00010101000000-000000000000 \
  -replace=github.com/kubeharness/kubeharness/harness="$root/harness"
go mod tidy
versions >"$work/after.txt"

if ! diff -u "$work/before.txt" "$work/after.txt"; then
  echo "adopt: adding the harness changed the project's versions (above: - before, + after)" >&2
  exit 1
fi
log "go mod tidy kept all $(wc -l <"$work/before.txt") versions of controller-runtime, k8s.io/*, Ginkgo and Gomega"

log "the scaffolded suites on harness/envtest"
go test -count=1 -v ./internal/... >"$work/test.log" 2>&1 || { cat "$work/test.log" >&2; echo "adopt: the scaffolded suites failed on the drop-in (above)" >&2; exit 1; }
grep -E '^(ok|FAIL|---)|Ran [0-9]+ of' "$work/test.log" | sed 's/\x1b\[[0-9;]*m//g'
# The controller suite's scaffolded spec starts the control plane; the
# webhook suite's scaffold holds no spec yet, so Ginkgo runs no BeforeSuite.
grep -qE 'Ran [1-9][0-9]* of [0-9]+ Specs' "$work/test.log" ||
  { echo "adopt: no scaffolded spec ran, so nothing started the drop-in's control plane" >&2; exit 1; }
log "adopt: kubebuilder $kbversion's project kept its versions and passed on the drop-in"
