#!/usr/bin/env bash
# Runs the suites of examples/noticeboard, a kubebuilder-scaffolded operator
# project that is not ours, on binaries from
#
#   KUBEBUILDER_ASSETS=$(kubeharness bins use $VERSION -p path --bin-dir $BIN_DIR)
#
# Its suites import harness/envtest in place of controller-runtime's envtest
# and run in parallel Ginkgo processes on one control plane (harness/suite).
# This script proves, in order:
#   1. the suites pass on the drop-in in $PROCS processes;
#   2. they pass on controller-runtime's own envtest (KUBEHARNESS_ENVTEST=stock),
#      so the binaries serve both;
#   3. a spec made to fail (NOTICEBOARD_FAIL_ON_PURPOSE=1) fails the run and
#      leaves a failure bundle with its namespace's Notice and the webhook
#      server's log lines from the spec's time, written by whichever
#      process ran it;
#   4. each run leaves its page (kubeharness report): <dir>/report/index.html,
#      and the failed run's page shows the failing spec.
#
# Usage: hack/example-test.sh          (or `make test-example`)
#        hack/example-test.sh suites   run the suites once, as they are set
#                                      up ($PROCS, $KUBEHARNESS_ENVTEST,
#                                      $KUBEBUILDER_ASSETS), compiled when
#                                      $BENCH_ROUND is 0, the Ginkgo report
#                                      in $BENCH_OUT when set, shard $SHARD
#                                      (k/n) only when set, packed by
#                                      $SHARD_TIMINGS: make bench uses it
# Environment: VERSION (default 1.37), BIN_DIR (default <repo>/bin), PROCS
# (default 2), ARTIFACTS (default <repo>/artifacts/example).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VERSION=${VERSION:-1.37}
BIN_DIR=${BIN_DIR:-$ROOT/bin}
PROCS=${PROCS:-2}
ARTIFACTS=${ARTIFACTS:-$ROOT/artifacts}/example
START=$SECONDS
EXAMPLE=examples/noticeboard
PKGS=./internal/...

suites() { # suites ARTIFACTS_DIR [ginkgo flags...]: the run and its page
  local dir=$1 status=0; shift
  (cd "$EXAMPLE" && ARTIFACTS=$dir go tool ginkgo --procs="$PROCS" --json-report=report.json --output-dir="$dir" "$@" $PKGS) || status=$?
  bin/kubeharness report "$dir" >/dev/null || { echo "example: no run report for $dir" >&2; return 1; }
  return $status
}

if [ "${1:-}" = suites ]; then
  # Compiled once (bench's uncounted round 0, or when missing), then run
  # as they are, so that the figures are the suites' and not the linker's.
  tests=("$EXAMPLE/internal/controller/controller.test" "$EXAMPLE/internal/webhook/v1/v1.test")
  if [ "${BENCH_ROUND:-0}" = 0 ] || [ ! -x "${tests[0]}" ] || [ ! -x "${tests[1]}" ]; then
    (cd "$EXAMPLE" && go tool ginkgo build $PKGS >/dev/null)
  fi
  # make bench reads the Ginkgo report ($BENCH_OUT/report.json) for the
  # suites' setup and teardown.
  report=()
  [ -z "${BENCH_OUT:-}" ] || report=(--json-report=report.json --output-dir="$BENCH_OUT")
  # SHARD=k/n runs shard k of n of the suites' specs (kubeharness shard),
  # packed by the times in SHARD_TIMINGS (a previous run's report.json).
  shard=()
  if [ -n "${SHARD:-}" ]; then
    mkdir -p "$ARTIFACTS/shard"
    (cd "$EXAMPLE" && go tool ginkgo --dry-run --json-report=dry-run.json --output-dir="$ARTIFACTS/shard" \
      ./internal/controller/controller.test ./internal/webhook/v1/v1.test >/dev/null) ||
      { echo "example: the dry run that lists the specs to shard failed" >&2; exit 1; }
    args=$(bin/kubeharness shard --dry-run "$ARTIFACTS/shard/dry-run.json" ${SHARD_TIMINGS:+--timings "$SHARD_TIMINGS"} --shard "$SHARD") ||
      { echo "example: kubeharness shard failed (above)" >&2; exit 1; }
    mapfile -t shard <<<"$args"
  fi
  (cd "$EXAMPLE" && ARTIFACTS=$ARTIFACTS/bench go tool ginkgo --procs="$PROCS" "${report[@]}" "${shard[@]}" \
    ./internal/controller/controller.test ./internal/webhook/v1/v1.test)
  exit
fi

go build -o bin/kubeharness ./cmd/kubeharness
ASSETS=$(bin/kubeharness bins use "$VERSION" --with-controller-manager -p path --bin-dir "$BIN_DIR") \
  || { echo "example: kubeharness bins use $VERSION failed" >&2; exit 1; }
echo "example: KUBEBUILDER_ASSETS=$ASSETS ($((SECONDS - START))s)"
export KUBEBUILDER_ASSETS=$ASSETS
rm -rf "$ARTIFACTS"

echo "example: the suites on harness/envtest, $PROCS processes on one control plane"
suites "$ARTIFACTS/drop-in"
echo "example: the suites on controller-runtime's envtest (KUBEHARNESS_ENVTEST=stock), $PROCS processes"
KUBEHARNESS_ENVTEST=stock suites "$ARTIFACTS/stock"

echo "example: a spec failing on purpose leaves a failure bundle"
failed=$ARTIFACTS/fail-on-purpose
if NOTICEBOARD_FAIL_ON_PURPOSE=1 suites "$failed" --label-filter=fail-on-purpose >"$ARTIFACTS/fail-on-purpose.log" 2>&1; then
  echo "example: the run with a spec failing on purpose passed; see $ARTIFACTS/fail-on-purpose.log" >&2
  exit 1
fi
check() { # check FILE PATTERN WHAT
  grep -q -- "$2" "$1" 2>/dev/null || { echo "example: missing $3: no '$2' in $1" >&2; ls -R "$failed" >&2 || true; exit 1; }
}
bundle=("$failed"/failures/A-failing-spec-fails-on-purpose*)
[ -d "${bundle[0]}" ] || { echo "example: no failure bundle in $failed/failures" >&2; ls -R "$failed" >&2 || true; exit 1; }
check "${bundle[0]}/objects.yaml" "name: left-for-the-bundle" "the Notice the spec created"
check "${bundle[0]}/objects.yaml" "kind: Notice" "the Notice the spec created"
check "${bundle[0]}/manager.log" "Defaulting for Notice" "the webhook server's log line about the Notice"
[ -f "${bundle[0]}/events.txt" ] || { echo "example: the failure bundle lacks events.txt" >&2; exit 1; }
echo "example: failure bundle ${bundle[0]} holds the Notice and the webhook's lines"
check "$failed/report/index.html" "fails on purpose" "the failing spec on the run's page"
check "$ARTIFACTS/drop-in/report/index.html" "PASSED" "the verdict on the passing run's page"
echo "example: run pages $ARTIFACTS/drop-in/report/index.html and $failed/report/index.html"
echo "example: passed in $((SECONDS - START))s"
