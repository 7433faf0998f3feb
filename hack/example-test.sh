#!/usr/bin/env bash
# Runs the suites of examples/noticeboard, a kubebuilder-scaffolded operator
# project that is not ours, the way its users run them: `go test` over every
# package but test/e2e (kubebuilder's own `make test` filter), with
#
#   KUBEBUILDER_ASSETS=$(kubeharness bins use $VERSION -p path --bin-dir $BIN_DIR)
#
# first on the harness's drop-in (its suites import harness/envtest), then
# on controller-runtime's own envtest (KUBEHARNESS_ENVTEST=stock), so the
# binaries serve both. BIN_DIR defaults to this repository's bin/, so what
# `make envtest-bins` built is reused; `bins use` adds kubectl.
#
# Usage: hack/example-test.sh   (or `make test-example`)
# Environment: VERSION (default 1.37), BIN_DIR (default <repo>/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VERSION=${VERSION:-1.37}
BIN_DIR=${BIN_DIR:-$ROOT/bin}
START=$SECONDS

go build -o bin/kubeharness ./cmd/kubeharness
ASSETS=$(bin/kubeharness bins use "$VERSION" -p path --bin-dir "$BIN_DIR") \
  || { echo "example: kubeharness bins use $VERSION failed" >&2; exit 1; }
echo "example: KUBEBUILDER_ASSETS=$ASSETS ($((SECONDS - START))s)"
export KUBEBUILDER_ASSETS=$ASSETS

cd examples/noticeboard
# shellcheck disable=SC2046 # one word per package
set -- $(go list ./... | grep -v /e2e)
echo "example: the suites on harness/envtest"
go test -count=1 "$@"
echo "example: the suites on controller-runtime's envtest (KUBEHARNESS_ENVTEST=stock)"
KUBEHARNESS_ENVTEST=stock go test -count=1 "$@"
echo "example: passed in $((SECONDS - START))s"
