#!/usr/bin/env bash
# What `ginkgo -p` costs a suite that starts envtest in a plain BeforeSuite:
# every Ginkgo process then starts a control plane of its own. Against
# that, examples/noticeboard's suites start one plane in
# SynchronizedBeforeSuite and share it (harness/suite).
#
# The unmodified suites are a kubebuilder scaffold with its import switched
# to harness/envtest (hack/adopt-check.sh makes it). Each suite set runs at
# 1, 2 and 4 processes; the scaffold on the drop-in and on controller-
# runtime's envtest (KUBEHARNESS_ENVTEST=stock). Suites are compiled first
# and etcd templates made by a first, uncounted run, so the walls are the
# runs'. One run per cell: the machine's noise is in the figures.
#
# Usage: hack/procs-bench.sh   (make bench-procs)
# Environment:
#   KUBEBUILDER_ASSETS  the control-plane binaries, with kube-controller-manager
#                       (make bench-procs sets it from `kubeharness bins`)
#   PROCS_LIST          process counts (default: 1 2 4)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS to the control-plane binaries, e.g. \$(bin/kubeharness bins --with-controller-manager --print-dir)}"
export KUBEBUILDER_ASSETS
log() { printf '[procs %4ds] %s\n' "$SECONDS" "$*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "scaffolding the unmodified suites (hack/adopt-check.sh)"
ADOPT_DIR=$work "$root/hack/adopt-check.sh" >"$work/adopt.log" 2>&1 || { cat "$work/adopt.log" >&2; exit 1; }
project=$work/project

# Each project's own Ginkgo, as its CLI must match its library.
ginkgo_of() { # ginkgo_of DIR: the path of a ginkgo CLI of DIR's Ginkgo version
  local v
  v=$(cd "$1" && go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
  GOBIN=$work/ginkgo-$v go install "github.com/onsi/ginkgo/v2/ginkgo@$v"
  echo "$work/ginkgo-$v/ginkgo"
}
scaffold_ginkgo=$(ginkgo_of "$project")
example=$root/examples/noticeboard
example_ginkgo=$(ginkgo_of "$example")
(cd "$project" && "$scaffold_ginkgo" build ./internal/... >/dev/null)
(cd "$example" && "$example_ginkgo" build ./internal/... >/dev/null)

run() { # run NAME PROCS ENVTEST: one timed run, its wall in seconds on stdout
  local name=$1 procs=$2 envtest=$3 dir ginkgo began status=0
  case $name in
    scaffold) dir=$project ginkgo=$scaffold_ginkgo ;;
    example) dir=$example ginkgo=$example_ginkgo ;;
  esac
  began=$(date +%s.%N)
  (cd "$dir" && ARTIFACTS=$work/artifacts KUBEHARNESS_ENVTEST=$envtest \
    "$ginkgo" --procs="$procs" ./internal/controller/controller.test ./internal/webhook/v1/v1.test) \
    >"$work/$name-$envtest-$procs.log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    cat "$work/$name-$envtest-$procs.log" >&2
    log "$name on $envtest at $procs processes failed (above)"
    exit 1
  fi
  awk -v end="$(date +%s.%N)" -v began="$began" 'BEGIN { print end - began }'
}

log "first runs (uncounted): etcd templates, page cache"
run scaffold 1 tuned >/dev/null
run example 1 tuned >/dev/null

printf '%-10s %-68s %8s\n' processes suites wall
for procs in ${PROCS_LIST:-1 2 4}; do
  for cell in "scaffold tuned kubebuilder scaffold, a plane per process, drop-in" "scaffold stock kubebuilder scaffold, a plane per process, controller-runtime's envtest" "example tuned examples/noticeboard, one shared plane (harness/suite), drop-in"; do
    read -r name envtest what <<<"$cell"
    wall=$(run "$name" "$procs" "$envtest")
    printf '%-10s %-68s %7.2fs\n' "$procs" "$what" "$wall"
  done
done
