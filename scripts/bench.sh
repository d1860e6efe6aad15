#!/usr/bin/env bash
# Runs every benchmark under scripts/ in turn and stops at the first that fails, naming it.
#
#   scripts/bench.sh           full runs: release builds, RUNS runs each, ratios against their
#                              targets. Long: bench-reuse installs CUDA 13 (~1.4 GB) the first
#                              time, bench-cupy-rebuild builds CuPy several times.
#   scripts/bench.sh --smoke   each one with SMOKE=1: one run on small inputs, no ratio judged,
#                              the debug binaries (a few minutes in all). .ci/run does this, so a
#                              benchmark that stops working cannot land.
#
# bench-cache.sh and bench-cupy-rebuild.sh are kept by others; each runs when it is present and
# executable, and the summary says when one was not there to run. Every script is handed the
# binaries built once here (BIN, VOUCH_BIN): a smoke pass must not start a release build, and
# cargo relinks vouch whenever one command builds another set of packages than the last.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "") smoke=0 ;;
  --smoke) smoke=1 ;;
  *) echo "usage: scripts/bench.sh [--smoke]" >&2; exit 2 ;;
esac
SMOKE=$smoke
. scripts/bench-lib.sh
bench_build
export BIN=${BIN:-$bin} VOUCH_BIN=${VOUCH_BIN:-$bin/vouch}

# Each script here must exist and pass; the optional ones must pass when they exist.
required=(audit fetch inputs normalize reuse verify)
optional=(cache cupy-rebuild)

summary=()
run_one() { # NAME
  local script=scripts/bench-$1.sh start status
  echo "=== bench-$1 ($([ "$smoke" = 1 ] && echo smoke || echo full))"
  start=$(date +%s.%N)
  status=0
  SMOKE=$smoke "$script" || status=$?
  local took
  took=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
  if [ "$status" -ne 0 ]; then
    echo "bench.sh: bench-$1 FAILED (exit $status after $took s): $script" >&2
    exit 1
  fi
  summary+=("$(printf '%-22s ok  %7s s' "bench-$1" "$took")")
}

for name in "${required[@]}"; do
  [ -x "scripts/bench-$name.sh" ] || { echo "bench.sh: scripts/bench-$name.sh is missing or not executable" >&2; exit 1; }
  run_one "$name"
done
for name in "${optional[@]}"; do
  if [ "$smoke" = 1 ] && [ -x "scripts/bench-$name.sh" ] && ! grep -q SMOKE "scripts/bench-$name.sh"; then
    # Without a smoke mode it would make a full run, far past what CI has time for.
    summary+=("$(printf '%-22s not run: scripts/bench-%s.sh has no SMOKE mode yet' "bench-$name" "$name")")
  elif [ -x "scripts/bench-$name.sh" ]; then
    run_one "$name"
  else
    summary+=("$(printf '%-22s not run: scripts/bench-%s.sh is not present or not executable' "bench-$name" "$name")")
  fi
done

echo "=== bench.sh summary"
printf '%s\n' "${summary[@]}"
