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
# Every script is handed the
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

# Every benchmark must exist and pass.
names=(audit fetch inputs normalize reuse verify cache cupy-rebuild)

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

for name in "${names[@]}"; do
  [ -x "scripts/bench-$name.sh" ] || { echo "bench.sh: scripts/bench-$name.sh is missing or not executable" >&2; exit 1; }
  run_one "$name"
done

echo "=== bench.sh summary"
printf '%s\n' "${summary[@]}"
