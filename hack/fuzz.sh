#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each, one after the
# other, and prints a table of what each did: executions, new interesting
# inputs (added to the cache, not to the tree) and the result.
#
# Usage: hack/fuzz.sh   (or `make fuzz FUZZTIME=30s`)
# Environment:
#   FUZZTIME           how long each target runs: a duration (30s) or a
#                      count of executions (1000x); default 30s
#   FUZZ_PARALLEL      fuzzing workers per target; default: the CPUs
#   FUZZ_TARGETS       an extended regular expression; only the targets whose
#                      name or package/name matches run (default: all)
#   FUZZ_MINIMIZETIME  how long Go minimizes each new input, a failing one
#                      included (-fuzzminimizetime); default 10x, ten runs:
#                      Go's own, 60s per new input, would spend a short run
#                      minimizing rather than fuzzing
#   FUZZ_TIMEOUT       go test's -timeout for one target; default 1h
#
# The targets are found with `go test -list '^Fuzz'`, so a new one is never
# left out; their seed corpora (f.Add and testdata/fuzz/<Target>/) also run
# in `go test`, and so in `make test-unit`. Each run first replays the seeds
# and the inputs earlier runs found interesting, kept in Go's cache
# ($(go env GOCACHE)/fuzz, emptied by `go clean -fuzzcache`), within its
# FUZZTIME: a run too short to get through them fuzzes nothing, which the
# table shows as "0 (corpus done/all)". A failing input is written by Go to
# <package>/testdata/fuzz/<Target>/<hash>: from then on `go test` runs it
# as a seed, so fix the bug and commit the file as its regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-30s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
FUZZ_TARGETS=${FUZZ_TARGETS:-}
FUZZ_MINIMIZETIME=${FUZZ_MINIMIZETIME:-10x}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-1h}
START=$SECONDS

log() { printf '[fuzz %4ds] %s\n' "$((SECONDS - START))" "$*"; }

# The packages `make test-unit` tests: the e2e suites need a control plane.
mapfile -t packages < <(go list ./... | grep -v -e '/e2e$' -e '/e2e/smoke$')
log "listing fuzz targets in ${#packages[@]} packages"
# `go test -list` prints a package's matching names, then "ok <package> ...".
targets=()
names=()
listing=$(go test -list '^Fuzz' "${packages[@]}")
while read -r first second _; do
  case "$first" in
    Fuzz*) names+=("$first") ;;
    ok)
      for n in ${names[@]+"${names[@]}"}; do
        if [ -z "$FUZZ_TARGETS" ] || [[ "$n" =~ $FUZZ_TARGETS ]] || [[ "$second/$n" =~ $FUZZ_TARGETS ]]; then
          targets+=("$second $n")
        fi
      done
      names=()
      ;;
  esac
done <<<"$listing"
if [ ${#targets[@]} -eq 0 ]; then
  log "no fuzz targets${FUZZ_TARGETS:+ match $FUZZ_TARGETS}" >&2
  exit 1
fi
log "${#targets[@]} targets, ${FUZZTIME} each, ${FUZZ_PARALLEL} workers"

module=$(go list -m)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
rows=()
failed=()
flaked=
for t in "${targets[@]}"; do
  pkg=${t% *}
  name=${t#* }
  short=${pkg#"$module"/}
  out="$logs/$name.$RANDOM.log"
  log "$short $name"
  began=$SECONDS
  status=0
  # Each target alone: -fuzz takes one package and one target. Its output
  # is streamed, prefixed with the target's name.
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZ_MINIMIZETIME" \
    -parallel="$FUZZ_PARALLEL" -timeout="$FUZZ_TIMEOUT" "./$short" 2>&1 | tee "$out" | sed -u "s/^/  [$name] /" || status=$?
  # The last progress line has the totals, e.g.
  # "fuzz: elapsed: 30s, execs: 123456 (4115/sec), new interesting: 3 (total: 41)".
  last=$(grep -E '^fuzz: elapsed: .*execs: ' "$out" | tail -n 1 || true)
  execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
  interesting=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
  # A run too short to get past replaying the corpus fuzzes nothing.
  if [ -z "$execs" ]; then
    baseline=$(sed -nE 's/.*gathering baseline coverage: ([0-9]+\/[0-9]+).*/\1/p' "$out" | tail -n 1)
    execs=${baseline:+"0 (corpus $baseline)"}
  fi
  result=PASS
  # Go 1.26's fuzzing coordinator can fail a run at its end with a bare
  # "context deadline exceeded" and no input written (go.dev/issue/75804,
  # fixed in Go 1.27): that is no finding.
  if [ "$status" -ne 0 ] && [ -n "$last" ] && ! grep -q 'Failing input written' "$out" &&
    grep -A1 -E "^--- FAIL: ${name} \(" "$out" | tail -n 1 | grep -qx '    context deadline exceeded'; then
    status=0
    result='PASS*'
    flaked=yes
  fi
  if [ "$status" -ne 0 ]; then
    result=FAIL
    input=$(sed -nE 's/.*Failing input written to (testdata\/fuzz\/[^ ]+).*/\1/p' "$out" | tail -n 1)
    if [ -n "$input" ]; then
      failed+=("$short $name: $short/$input (re-run: go test -run='^$name/$(basename "$input")\$' ./$short)")
    else
      failed+=("$short $name: failed before fuzzing (a seed, the build or the time limit); see its output above")
    fi
  fi
  rows+=("$name|$short|${execs:--}|${interesting:--}|$result|$((SECONDS - began))s")
done

printf '\n%-26s %-24s %22s %12s %-6s %6s\n' TARGET PACKAGE EXECUTIONS INTERESTING RESULT TIME
for r in "${rows[@]}"; do
  IFS='|' read -r name pkg execs interesting result took <<<"$r"
  printf '%-26s %-24s %22s %12s %-6s %6s\n' "$name" "$pkg" "$execs" "$interesting" "$result" "$took"
done
printf '%d target(s), %s each, %ds in all\n' "${#targets[@]}" "$FUZZTIME" "$((SECONDS - START))"
if [ -n "$flaked" ]; then
  printf '* go test failed at the end of FUZZTIME with "context deadline exceeded" and wrote no input:\n'
  printf '  the Go fuzzing coordinator'"'"'s race go.dev/issue/75804 (fixed in Go 1.27), not a finding.\n'
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf '\nFAILED:\n' >&2
  printf '  %s\n' "${failed[@]}" >&2
  printf 'Go wrote each failing input to the package'"'"'s testdata/fuzz/<Target>/; go test now runs it as a seed.\n' >&2
  printf 'Fix the bug and commit the input as its regression test.\n' >&2
  exit 1
fi
