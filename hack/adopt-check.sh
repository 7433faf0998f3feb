#!/usr/bin/env bash
# Adopting the harness changes none of a project's versions, and takes
# what docs/harness.md tells a kubebuilder project to do. A project
# scaffolded by an older kubebuilder (hack/kubebuilder pins v4.15.0, whose
# scaffold requires controller-runtime v0.24.1) gets an API, a controller
# and a webhook, generated as kubebuilder generates them. Then, as an
# adopter would from a released tag:
#   1. this checkout is committed to a local git repository and tagged
#      harness/<version>; git's insteadOf makes it
#      github.com/kubeharness/kubeharness and GOPRIVATE makes Go fetch it
#      from there (nothing is published from here);
#   2. the project's two suites switch one import line each to
#      harness/envtest, `go get` requires the harness at the tag and
#      `go get -tool` adds the kubeharness command; `go mod tidy` runs. The
#      versions of controller-runtime, every k8s.io module, Ginkgo and
#      Gomega (go list -m all) must be the same before and after;
#   3. the scaffold's setup-envtest target is changed as docs/harness.md
#      says: ENVTEST is `go tool kubeharness bins`, no setup-envtest is
#      downloaded, and the test target runs
#      `go tool kubeharness bins use $(ENVTEST_K8S_VERSION) --bin-dir
#      $(LOCALBIN) -p path`;
#   4. the store is filled as a CI cache restores it (the binaries of
#      $KUBEBUILDER_ASSETS copied to bin/k8s/<version>-<os>-<arch>), and the
#      project's own `make test` must pass on the drop-in, at that version;
#   5. `go install` of the command at the tag answers bins list and
#      shard --help.
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
# The binaries fill the project's store below, as a CI cache restores it;
# the project's make test then finds them there itself.
assets=$KUBEBUILDER_ASSETS
unset KUBEBUILDER_ASSETS
k8s=$("$assets/kube-apiserver" --version | sed -E 's/^Kubernetes v//')
[[ $k8s =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "adopt: $assets/kube-apiserver reports no Kubernetes version" >&2; exit 1; }

# Every run tags a version of its own: the module cache keeps what it
# downloaded for a version for ever. The exit trap removes it again.
version=v0.99.0-adopt.$(date +%s)
module=github.com/kubeharness/kubeharness/harness
modcache=$(go env GOMODCACHE)
if [ -n "${ADOPT_DIR:-}" ]; then
  work=$ADOPT_DIR
  rm -rf "$work/project" "$work/kubeharness" "$work/gobin"
else
  work=$(mktemp -d)
fi
cleanup() {
  chmod -R u+w "$modcache/$module@$version" 2>/dev/null || true
  rm -rf "$modcache/$module@$version" "$modcache/cache/download/$module/@v/$version".* "$modcache/cache/download/$module/@v/list"
  if [ -z "${ADOPT_DIR:-}" ]; then
    chmod -R u+w "$work" 2>/dev/null || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT
mkdir -p "$work/project" "$work/kubeharness"

log "tagging a copy of this checkout harness/$version in $work/kubeharness"
(cd "$root" && git ls-files -z -co --exclude-standard |
  while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf -) | tar -xf - -C "$work/kubeharness"
(
  cd "$work/kubeharness"
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=adopt GIT_AUTHOR_EMAIL=adopt@example.com GIT_COMMITTER_NAME=adopt GIT_COMMITTER_EMAIL=adopt@example.com
  git init -q && git add -A && git commit -q -m "a copy to adopt from" && git tag "harness/$version"
)
printf '[url "%s"]\n\tinsteadOf = https://github.com/kubeharness/kubeharness\n' "$work/kubeharness" >"$work/gitconfig"
export GIT_CONFIG_GLOBAL=$work/gitconfig GIT_CONFIG_NOSYSTEM=1 GOPRIVATE=github.com/kubeharness

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
go get -tool "$module/cmd/kubeharness@$version"
go mod tidy
versions >"$work/after.txt"

if ! diff -u "$work/before.txt" "$work/after.txt"; then
  echo "adopt: adding the harness changed the project's versions (above: - before, + after)" >&2
  exit 1
fi
log "go mod tidy kept all $(wc -l <"$work/before.txt") versions of controller-runtime, k8s.io/*, Ginkgo and Gomega"

log "the setup-envtest target changed to kubeharness (docs/harness.md)"
sed -i \
  -e 's#^ENVTEST ?= $(LOCALBIN)/setup-envtest$#ENVTEST ?= go tool kubeharness bins#' \
  -e 's#"$(ENVTEST)" use#$(ENVTEST) use#g' \
  -e 's#^setup-envtest: envtest \#\#.*#setup-envtest: \#\# Provide the binaries envtest needs in the local bin directory (kubeharness: a tool in go.mod).#' \
  -e '/^\.PHONY: envtest$/,/go-install-tool,$(ENVTEST),/d' \
  -e '/^#ENVTEST_VERSION is/,/^  printf/d' \
  Makefile
grep -q '^ENVTEST ?= go tool kubeharness bins$' Makefile && ! grep -q 'tools/setup-envtest\|ENVTEST_VERSION\|"$(ENVTEST)"' Makefile ||
  { grep -n -i envtest Makefile >&2; echo "adopt: the scaffold's setup-envtest target is not as docs/harness.md shows; has kubebuilder's scaffold changed? (above)" >&2; exit 1; }
grep -n -i 'envtest' Makefile | sed 's/^/  /'

log "the store filled as a CI cache restores it: bin/k8s/$k8s-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "bin/k8s/$k8s-$(go env GOOS)-$(go env GOARCH)"
find "$assets" -maxdepth 1 -type f -exec cp -p {} "bin/k8s/$k8s-$(go env GOOS)-$(go env GOARCH)/" \;

log "make test ENVTEST_K8S_VERSION=$k8s: the project's own target, its suites on harness/envtest"
times=$work/envtest-times.jsonl
rm -f "$times"
KUBEHARNESS_ENVTEST_TIMES=$times make test ENVTEST_K8S_VERSION="$k8s" >"$work/test.log" 2>&1 ||
  { cat "$work/test.log" >&2; echo "adopt: the project's make test failed on the drop-in (above)" >&2; exit 1; }
grep -E '^(ok|FAIL|---)' "$work/test.log" | sed 's/\x1b\[[0-9;]*m//g'
# The controller suite's scaffolded spec starts the control plane (the
# webhook suite's scaffold holds no spec yet, so Ginkgo runs no
# BeforeSuite): the drop-in's tuned start records its times.
[ -s "$times" ] || { cat "$work/test.log" >&2; echo "adopt: no suite started the drop-in's control plane (no $times)" >&2; exit 1; }
log "the drop-in started $(wc -l <"$times") control plane(s)"

log "go install $module/cmd/kubeharness@$version"
GOBIN=$work/gobin go install "$module/cmd/kubeharness@$version"
"$work/gobin/kubeharness" bins list -i --bin-dir bin | tee "$work/list.txt"
grep -q "(installed)  v$k8s" "$work/list.txt" || { echo "adopt: kubeharness bins list does not list $k8s" >&2; exit 1; }
"$work/gobin/kubeharness" shard --help | grep -q 'Usage:' || { echo "adopt: kubeharness shard --help printed no usage" >&2; exit 1; }
go tool kubeharness shard --help | grep -q 'Usage:' || { echo "adopt: go tool kubeharness shard --help printed no usage" >&2; exit 1; }
go tool kubeharness version | head -1
log "adopt: kubebuilder $kbversion's project kept its versions, took kubeharness as a tool, and passed its make test on the drop-in"
