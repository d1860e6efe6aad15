#!/usr/bin/env bash
# Benchmark: warm compiles of a synthetic 200-translation-unit C project through vouch's scoped
# gateway (directory store) vs the same compiler cache on a plain local directory, for ccache
# and sccache. Medians of RUNS warm runs each, alternating; prints the overhead ratio and the
# hit rates the tools report. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
CONFIGS=${CONFIGS:-"ccache-local:ccache ccache-gateway:ccache sccache-local:sccache sccache-gateway:sccache"}
TUS=${TUS:-200}
work=$(mktemp -d)
gw_pid=""
cleanup() { [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null; sccache --stop-server >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

cargo build --release --locked -q
vouch=$PWD/target/release/vouch
command -v ccache >/dev/null && command -v sccache >/dev/null || { echo "needs ccache and sccache on PATH" >&2; exit 1; }

# The project: TUS translation units of a few hundred lines each, sharing a header.
src=$work/src
mkdir -p "$src"
cat > "$src/common.h" <<'H'
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
static inline uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; return x; }
H
for i in $(seq 1 "$TUS"); do
  {
    echo '#include "common.h"'
    for j in $(seq 1 40); do
      echo "uint64_t f${i}_${j}(const uint8_t *p, size_t n) { uint64_t h = ${i}${j}ULL; for (size_t k = 0; k < n; k++) h = mix(h ^ p[k] ^ (k * ${j})); return h; }"
    done
  } > "$src/tu$i.c"
done

compile() { # $1 = launcher
  (cd "$src" && ls tu*.c | xargs -P "$(nproc)" -I{} $1 gcc -O2 -g -c {} -o {}.o)
}

export SCCACHE_SERVER_PORT=4399 SCCACHE_IDLE_TIMEOUT=0
"$vouch" -q cache serve --store "$work/store" --event push --ref refs/heads/main --url-file "$work/url" > /dev/null &
gw_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url=$(cat "$work/url")

# Each configuration: an env file; the first (cold) run fills the cache.
cat > "$work/ccache-local.env" <<E
export CCACHE_DIR=$work/ccache-local
E
cat > "$work/ccache-gateway.env" <<E
export CCACHE_DIR=$work/ccache-gw CCACHE_REMOTE_STORAGE=$url/ccache CCACHE_REMOTE_ONLY=true
E
cat > "$work/sccache-local.env" <<E
export SCCACHE_DIR=$work/sccache-local
E
cat > "$work/sccache-gateway.env" <<E
export SCCACHE_DIR=$work/sccache-gw SCCACHE_WEBDAV_ENDPOINT=$url/sccache
E

run_cfg() { # $1 = config name, $2 = launcher; prints seconds of a warm run
  (
    unset CCACHE_REMOTE_STORAGE CCACHE_REMOTE_ONLY SCCACHE_WEBDAV_ENDPOINT
    # shellcheck disable=SC1090
    source "$work/$1.env"
    if [ "$2" = sccache ]; then sccache --stop-server >/dev/null 2>&1 || true; sccache --start-server >/dev/null; sccache --zero-stats >/dev/null; fi
    if [ "$2" = ccache ]; then ccache --zero-stats >/dev/null; fi
    find "$src" -name '*.o' -delete
    start=$(date +%s.%N)
    compile "$2"
    end=$(date +%s.%N)
    if [ "$2" = sccache ]; then
      sccache --show-stats --stats-format json > "$work/$1.stats"
      sccache --stop-server >/dev/null 2>&1 || true
    else
      ccache --print-stats > "$work/$1.stats"
    fi
    echo "$end - $start" | bc -l
  )
}

for cfg in $CONFIGS; do
  run_cfg "${cfg%%:*}" "${cfg##*:}" > /dev/null   # cold: fill
done
declare -A times
for _ in $(seq "$RUNS"); do
  for cfg in $CONFIGS; do
    times[${cfg%%:*}]+="$(run_cfg "${cfg%%:*}" "${cfg##*:}") "
  done
done

python3 - "$work" "${times[ccache-local]:-}" "${times[ccache-gateway]:-}" "${times[sccache-local]:-}" "${times[sccache-gateway]:-}" "$TUS" <<'PY'
import json, statistics, sys
work, tus = sys.argv[1], int(sys.argv[6])
names = [n for n, t in zip(["ccache-local", "ccache-gateway", "sccache-local", "sccache-gateway"], sys.argv[2:6]) if t.strip()]
med = {}
for n, t in zip(names, [t for t in sys.argv[2:6] if t.strip()]):
    xs = [float(x) for x in t.split()]
    med[n] = statistics.median(xs)
    print(f"{n:16s} warm median {med[n]*1000:7.0f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in xs))
def rate(n):
    text = open(f"{work}/{n}.stats").read()
    if n.startswith("sccache"):
        s = json.loads(text)["stats"]
        hits = sum(s["cache_hits"]["counts"].values()); misses = sum(s["cache_misses"]["counts"].values())
    else:
        kv = dict(l.split("\t") for l in text.splitlines() if "\t" in l)
        hits = int(kv.get("direct_cache_hit", 0)) + int(kv.get("preprocessed_cache_hit", 0)); misses = int(kv.get("cache_miss", 0))
    return hits, misses
for n in names:
    h, m = rate(n)
    print(f"{n:16s} last warm run: {h} hits / {m} misses of {tus} TUs ({100*h/max(h+m,1):.1f}%)")
for tool in ("ccache", "sccache"):
    if f"{tool}-local" in med and f"{tool}-gateway" in med:
        print(f"{tool:8s} gateway/local: {med[tool + '-gateway']/med[tool + '-local']:.2f}x  (target <= 1.2x)")
PY
stats=$(curl -s "$url/_vouch/stats" 2>/dev/null || true)
[ -n "$stats" ] && echo "gateway counters: $stats"
