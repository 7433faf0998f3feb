#!/usr/bin/env bash
# Proves the control-plane binaries work for any operator project: a module
# of its own, outside this repository, requiring only controller-runtime (at
# the version this repository's go.mod names, and every module both use at
# this repository's versions, so that one compile of each in Go's build
# cache serves both), runs a small envtest suite
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

# This module's build list, read before anything below may change go.sum.
ROOT_MODULES=$(go list -m -f '{{.Path}}@{{.Version}}' all)

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
# controller-runtime names older patches of k8s.io/* and golang.org/x/*
# than this repository builds with; on a cold machine, compiling all of
# client-go and what it needs a second time took longer than the suite.
ALIGN=$(go list -m -f '{{if not .Main}}{{.Path}}{{end}}' all \
  | awk 'NR == FNR { at[$0] = 1; next } { split($0, m, "@"); if (m[1] in at) print }' - <(echo "$ROOT_MODULES"))
# Written into go.mod rather than fetched with go get, which asks the proxy
# about each module (half a minute) although all are in the module cache.
# shellcheck disable=SC2046 # one word per module
go mod edit $(printf -- '-require=%s ' $ALIGN)
go mod tidy

ASSETS=$("$KUBEHARNESS" bins use "$VERSION" -p path --bin-dir "$BIN_DIR") \
  || { echo "envtest-consumer: kubeharness bins use $VERSION failed" >&2; exit 1; }
echo "envtest-consumer: KUBEBUILDER_ASSETS=$ASSETS ($((SECONDS - START))s)"
KUBEBUILDER_ASSETS=$ASSETS go test -count=1 -v ./...
echo "envtest-consumer: passed in $((SECONDS - START))s"
