#!/usr/bin/env bash
# Fails when the generated files in the working tree (CRDs, RBAC, webhook
# manifests, deepcopy, the VirtualMachine client code in
# operator/vm/generated, and examples/noticeboard's) differ from what `make manifests generate` makes from
# the working tree's sources, when Go files are not gofmt-formatted, or when
# a go.mod is not tidy. Generation runs in a scratch copy, so the working
# tree is never changed.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Tracked files plus new ones not ignored, as they are in the working tree.
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue
  mkdir -p "$scratch/$(dirname "$f")"
  cp -p "$f" "$scratch/$f"
done
(cd "$scratch" && make --no-print-directory -s manifests generate >/dev/null)
# The example project regenerates with its own Makefile and the
# controller-gen version kubebuilder pinned there.
(cd "$scratch/examples/noticeboard" && make --no-print-directory -s manifests generate >/dev/null 2>&1) \
  || { echo "examples/noticeboard: make manifests generate failed" >&2; status=1; }
drift=$(diff -r config "$scratch/config" 2>&1; diff -r operator/vm/generated "$scratch/operator/vm/generated" 2>&1
  for f in $(cd "$scratch" && find operator examples/noticeboard/api -name 'zz_generated*.go'); do diff "$f" "$scratch/$f" 2>&1 || true; done
  diff -r examples/noticeboard/config "$scratch/examples/noticeboard/config" 2>&1) || true
if [ -n "$drift" ]; then
  echo "Generated files differ from what 'make manifests generate' produces:" >&2
  echo "$drift" | head -40 >&2
  echo "Run 'make manifests generate' and commit the result." >&2
  status=1
fi

unformatted=$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 gofmt -l)
if [ -n "$unformatted" ]; then
  echo "Not gofmt-formatted (run 'make fmt'):" >&2
  echo "$unformatted" >&2
  status=1
fi

for mod in . harness harness/kind hack/kubebuilder hack/controlplane hack/controlplane/etcd hack/tools hack/kind-node examples/noticeboard; do
  if ! (cd "$mod" && go mod tidy -diff >/dev/null 2>&1); then
    echo "$mod: go.mod or go.sum is not tidy: run 'cd $mod && go mod tidy' and commit." >&2
    status=1
  fi
done

# Build output never belongs in git (bin/ is ignored; a stray `go build`
# in the root is not).
large=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r du -k 2>/dev/null | awk '$1 > 1024 {print $2}')
if [ -n "$large" ]; then
  echo "Files over 1 MiB would be committed (build output?):" >&2
  echo "$large" >&2
  status=1
fi

[ "$status" -eq 0 ] && echo "verify: generated files, formatting and go.mod files are up to date"
exit "$status"
