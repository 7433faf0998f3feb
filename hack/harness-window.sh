#!/usr/bin/env bash
# Proves the harness module against every controller-runtime of its
# window: for each version given, the module's go.mod is copied to a
# scratch file, controller-runtime and the k8s.io modules its go.mod names
# are set to that version's (go get -modfile), and the module's packages
# are vetted and tested against it (go vet/go test -modfile). The working
# tree's harness/go.mod (the oldest supported versions, which make
# test-unit already tests) is never changed.
#
# Usage: hack/harness-window.sh VERSION...   (make test-harness-window)
# Environment:
#   WINDOW_TEST_FLAGS  flags for go test (default: none); e.g. -short, -run=X
set -euo pipefail
cd "$(dirname "$0")/../harness"

[ $# -gt 0 ] || { echo "usage: $0 CONTROLLER_RUNTIME_VERSION... (e.g. v0.24.1 v0.25.2)" >&2; exit 2; }

own=$(go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
results=()
status=0
for v in "$@"; do
  start=$SECONDS
  if [ "$v" = "$own" ]; then
    echo "=== controller-runtime $v: harness/go.mod's own (make test-unit tests it)"
    results+=("$(printf '%-8s %s' "$v" "the module's own requirement: tested by make test-unit")")
    continue
  fi
  # The k8s.io libraries that go with this controller-runtime: the ones
  # its own go.mod requires.
  gomod=$(go mod download -json "sigs.k8s.io/controller-runtime@$v" | sed -nE 's/^\s*"GoMod": "(.*)",?$/\1/p')
  [ -n "$gomod" ] || { echo "controller-runtime $v: the Go module proxy did not serve it" >&2; exit 1; }
  k8s=$(sed -nE 's/^\s*k8s\.io\/apimachinery (v[^ ]+).*/\1/p' "$gomod" | head -n 1)
  echo "=== controller-runtime $v with k8s.io $k8s"
  mkdir -p "$scratch/$v"
  cp go.mod "$scratch/$v/go.mod"
  cp go.sum "$scratch/$v/go.sum"
  mf="-modfile=$scratch/$v/go.mod"
  mods=("sigs.k8s.io/controller-runtime@$v")
  for m in api apimachinery client-go apiextensions-apiserver; do
    grep -qE "^\s*k8s.io/$m " "$scratch/$v/go.mod" && mods+=("k8s.io/$m@$k8s")
  done
  result=ok
  if ! go get "$mf" "${mods[@]}" >"$scratch/$v/get.log" 2>&1 || ! go mod tidy "$mf" >>"$scratch/$v/get.log" 2>&1; then
    cat "$scratch/$v/get.log" >&2
    result="FAILED to resolve"
  elif ! go vet "$mf" ./...; then
    result="FAILED go vet"
  elif ! go test "$mf" ${WINDOW_TEST_FLAGS:-} ./...; then
    result="FAILED go test"
  fi
  [ "$result" = ok ] || status=1
  results+=("$(printf '%-8s k8s.io %-8s %-18s %4ds' "$v" "$k8s" "$result" "$((SECONDS - start))")")
done
echo
echo "=== the harness module against controller-runtime (harness/go.mod requires $own)"
printf '%s\n' "${results[@]}"
exit "$status"
