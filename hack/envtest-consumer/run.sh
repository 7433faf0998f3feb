#!/usr/bin/env bash
# Proves the control-plane binaries work for any operator project: a module
# of its own, outside this repository, requiring only controller-runtime (at
# the version this repository's go.mod names), runs a small envtest suite
# (testdata/suite_test.go) with
#
#   KUBEBUILDER_ASSETS=$(kubeharness bins use $VERSION -p path --bin-dir $BIN_DIR)
#
# run from that module's directory, where no versions.yaml is found. BIN_DIR
# defaults to this repository's bin/, so binaries `make envtest-bins` built
# are used as they are (nothing is rebuilt); name another to fill a fresh
# store. Uses the Go module cache and GOPROXY as they are set.
#
# Usage: hack/envtest-consumer/run.sh   (or `make test-external-envtest`)
# Environment: VERSION (default 1.37), BIN_DIR (default <repo>/bin).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
VERSION=${VERSION:-1.37}
BIN_DIR=${BIN_DIR:-$ROOT/bin}
START=$SECONDS

KUBEHARNESS=$ROOT/bin/kubeharness
go build -o "$KUBEHARNESS" ./cmd/kubeharness
CR_VERSION=$(go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp hack/envtest-consumer/testdata/suite_test.go "$WORK/"
cd "$WORK"
cat >go.mod <<MOD
module example.com/envtest-consumer

go 1.26.0

require sigs.k8s.io/controller-runtime $CR_VERSION
MOD
export GOFLAGS=-mod=mod
go mod tidy

ASSETS=$("$KUBEHARNESS" bins use "$VERSION" -p path --bin-dir "$BIN_DIR") \
  || { echo "envtest-consumer: kubeharness bins use $VERSION failed" >&2; exit 1; }
echo "envtest-consumer: KUBEBUILDER_ASSETS=$ASSETS ($((SECONDS - START))s)"
KUBEBUILDER_ASSETS=$ASSETS go test -count=1 -v ./...
echo "envtest-consumer: passed in $((SECONDS - START))s"
