#!/usr/bin/env bash
# Vets Go modules (test files included) for systems other than the one it
# runs on, so that a Linux machine catches what breaks the build on
# Windows or macOS before CI's jobs there do.
#
#   hack/verify-cross.sh GOOS/GOARCH... -- MODULE_DIR...
#
# controller-runtime v0.25.0 to v0.25.2 do not compile for Windows: their
# pkg/internal/testing/process/signal_windows.go declares signalProcess,
# which process.go declares as a variable holding signalProcessImpl
# (kubernetes-sigs/controller-runtime#3586). Where a module's
# controller-runtime still has that, its Windows vet runs on a copy of
# that controller-runtime with the file fixed (a replace in a copy of the
# go.mod, -modfile; the module's own files and the module cache untouched)
# and says so: the check is for this repository's
# breaks, and that one is upstream's. It stops applying by itself once the
# module requires a controller-runtime with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

platforms=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do platforms+=("$1"); shift; done
[ $# -gt 0 ] && shift
modules=("$@")
if [ ${#platforms[@]} -eq 0 ] || [ ${#modules[@]} -eq 0 ]; then
  echo "usage: $0 GOOS/GOARCH... -- MODULE_DIR..." >&2
  exit 2
fi

# The fixed copies stay in bin/ (ignored by git) under their version's
# name, so that the build cache serves the next run.
scratch=bin/.verify-cross
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)

# fixedModfile prints -modfile=FILE for module dir $1 on Windows when its
# controller-runtime has the upstream break described above.
fixedModfile() {
  local mod=$1 dir file name fixed
  dir=$(cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/controller-runtime 2>/dev/null) || return 0
  file=$dir/pkg/internal/testing/process/signal_windows.go
  [ -f "$file" ] && grep -q '^func signalProcess(' "$file" || return 0
  name=${mod//\//_}
  fixed=$scratch/$(basename "$dir")-3586
  if [ ! -d "$fixed" ]; then
    rm -rf "$fixed.partial"
    cp -R "$dir" "$fixed.partial"
    chmod -R u+w "$fixed.partial"
    sed -i.orig 's/^func signalProcess(/func signalProcessImpl(/' "$fixed.partial/pkg/internal/testing/process/signal_windows.go"
    rm "$fixed.partial/pkg/internal/testing/process/signal_windows.go.orig"
    mv "$fixed.partial" "$fixed"
  fi
  cp "$mod/go.mod" "$scratch/$name.mod"
  cp "$mod/go.sum" "$scratch/$name.sum"
  go mod edit -replace="sigs.k8s.io/controller-runtime=$fixed" "$scratch/$name.mod"
  echo "verify-cross: $mod: $(cd "$mod" && go list -m -f '{{.Path}} {{.Version}}' sigs.k8s.io/controller-runtime) does not compile for Windows (kubernetes-sigs/controller-runtime#3586); vetting with that file fixed" >&2
  echo "-modfile=$scratch/$name.mod"
}

status=0
for mod in "${modules[@]}"; do
  for p in "${platforms[@]}"; do
    goos=${p%/*} goarch=${p#*/}
    flags=()
    if [ "$goos" = windows ]; then
      o=$(fixedModfile "$mod")
      [ -z "$o" ] || flags+=("$o")
    fi
    if (cd "$mod" && GOOS=$goos GOARCH=$goarch go vet ${flags[@]+"${flags[@]}"} ./...); then
      echo "verify-cross: $mod vets clean for $goos/$goarch"
    else
      echo "verify-cross: $mod does not vet for $goos/$goarch (above): fix it, or give what needs a Unix system a build tag and its other systems an error that says so" >&2
      status=1
    fi
  done
done
exit $status
