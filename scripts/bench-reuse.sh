#!/usr/bin/env bash
# How long reusing an installed CUDA toolkit takes, vouch's sealed check against its peers:
#   before  the check vouch made until issue 12: every recorded file's size (`find -printf %s`)
#   vouch   `vouch toolchain install` on an installed tree: lstat identity of every file
#           (inode, mtime, ctime, size) against the seal, hashing only what changed; the check
#           alone (from its log line) and the whole command (process, profile, nvcc --version)
#   hash    sha256 of every file (`sha256sum`), what a check without the identity fast path costs
# Medians of RUNS runs (default 5), and ratios. Needs an installed toolkit: the first run
# installs it (CUDA 13 from NVIDIA's PyPI wheels, ~1.4 GB download) unless it is there.
#
# Usage: scripts/bench-reuse.sh [CELL]   (default cuda13x-py3.11-linux-64)
# Env:   VOUCH_CACHE_DIR (default target/bench-cache), RUNS, VOUCH (default target/release/vouch)
set -euo pipefail
cd "$(dirname "$0")/.."
cell=${1:-cuda13x-py3.11-linux-64}
runs=${RUNS:-5}
export VOUCH_CACHE_DIR=${VOUCH_CACHE_DIR:-$PWD/target/bench-cache}
vouch=${VOUCH:-target/release/vouch}
[ -x "$vouch" ] || cargo build --release --locked -q
profile=pyproject-templates/cupy/vouch.toml

json=$("$vouch" toolchain install --profile "$profile" --cell "$cell" --json 2>/dev/null)
dir=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["dir"])' <<<"$json")
tree=$dir/tree
files=$(find "$tree" -type f | wc -l)
bytes=$(du -sb "$tree" | cut -f1)
echo "toolkit: $tree ($files files, $((bytes / 1048576)) MiB)"

now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A t
for name in before vouch check hash; do t[$name]=""; done
for _ in $(seq "$runs"); do
  s=$(now); find "$tree" -type f -printf '%s\n' >/dev/null; e=$(now)
  t[before]+="$(minus "$e" "$s")"$'\n'
  s=$(now); out=$("$vouch" -v toolchain install --profile "$profile" --cell "$cell" --json 2>&1); e=$(now)
  grep -q '"reused": true' <<<"$out" || { echo "the toolkit was not reused" >&2; exit 1; }
  t[vouch]+="$(minus "$e" "$s")"$'\n'
  # The seal check alone, as the library logs it.
  t[check]+="$(grep -o 'seal check.* seconds=[0-9.]*' <<<"$out" | sed 's/.*seconds=//')"$'\n'
  s=$(now); find "$tree" -type f -print0 | xargs -0 -P1 sha256sum >/dev/null; e=$(now)
  t[hash]+="$(minus "$e" "$s")"$'\n'
done
b=$(printf '%s' "${t[before]}" | median)
v=$(printf '%s' "${t[vouch]}" | median)
h=$(printf '%s' "${t[hash]}" | median)
c=$(printf '%s' "${t[check]}" | median)
printf 'median of %d runs: before (sizes) %.3f s; vouch seal check %.3f s (whole command %.3f s); full sha256 %.3f s\n' "$runs" "$b" "$c" "$v" "$h"
echo "ratio check/before $(div "$c" "$b"), check/full-hash $(div "$c" "$h")"
