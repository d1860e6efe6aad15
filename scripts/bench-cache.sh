#!/usr/bin/env bash
# Benchmark: warm compiles of a synthetic 200-translation-unit C project through vouch's scoped
# gateway vs the same compiler cache talking to the same store directly:
#   - directory: ccache and sccache on a local directory vs through a gateway on a directory;
#   - S3 (moto in server mode, the S3-API stand-in scripts/test.sh installs): sccache's own S3
#     client vs sccache through a gateway on the same bucket;
#   - GitHub cache (the v2 double in vouch-testgh, bin vouch-testghac): sccache's own GHA mode
#     vs sccache through a gateway on `--store gha`.
# (ccache has no S3 or GitHub-cache client, so it has no direct peer there.) Medians of RUNS
# warm runs each, configurations alternating; prints each overhead ratio and the hit rates the
# tools report. Not a test. Run scripts/test.sh once first (it installs the tools).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
CONFIGS=${CONFIGS:-"ccache-local:ccache ccache-gateway:ccache sccache-local:sccache sccache-gateway:sccache sccache-s3-direct:sccache sccache-s3-gateway:sccache sccache-gha-direct:sccache sccache-gha-gateway:sccache"}
TUS=${TUS:-200}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  exec 3>&- 2>/dev/null || true
  sccache --stop-server >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

cargo build --release --locked -q
cargo build --release --locked -q -p vouch-testgh --bin vouch-testghac
vouch=$PWD/target/release/vouch
export PATH=$PWD/target/test-tools/path:$PATH
for t in ccache sccache moto_server; do
  command -v $t >/dev/null || { echo "needs $t on PATH (run scripts/test.sh once)" >&2; exit 1; }
done
emu_python=$(dirname "$(readlink -f "$(command -v moto_server)")")/python

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
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return; sleep 0.05; done; echo "timed out waiting for $1" >&2; exit 1; }

# The S3 stand-in, one bucket; the same key pair for sccache's own client and the gateway's.
s3_port=$(free_port)
moto_server -H 127.0.0.1 -p "$s3_port" > /dev/null 2>&1 &
pids+=($!)
for _ in $(seq 200); do (echo > "/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null && break; sleep 0.05; done
"$emu_python" -c 'import sys, boto3; boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="bench", aws_secret_access_key="bench").create_bucket(Bucket="bench")' "http://127.0.0.1:$s3_port"
printf bench > "$work/s3-secret"

# The GitHub cache double: it prints its URL and tokens, and serves while fd 3 stays open.
mkfifo "$work/ghac-in"
target/release/vouch-testghac < "$work/ghac-in" > "$work/ghac.env" &
pids+=($!)
exec 3> "$work/ghac-in"
wait_file "$work/ghac.env"
for _ in $(seq 200); do grep -q '^$' "$work/ghac.env" && break; sleep 0.05; done
# shellcheck disable=SC1091
source "$work/ghac.env"

serve() { # $1 = name, then `cache serve` store flags; the gateway of a trusted push of main
  local name=$1
  shift
  "$vouch" -q cache serve "$@" --event push --ref refs/heads/main --url-file "$work/$name.url" > /dev/null &
  pids+=($!)
  wait_file "$work/$name.url"
}
serve dir --store "$work/store"
serve s3 --store "s3://bench/gateway?region=us-east-1&endpoint=http://127.0.0.1:$s3_port&access_key_id=bench" --password-file "$work/s3-secret"
ACTIONS_CACHE_SERVICE_V2=1 ACTIONS_RESULTS_URL=$ACTIONS_RESULTS_URL ACTIONS_RUNTIME_TOKEN=$VOUCH_GHAC_MAIN_TOKEN \
  serve gha --store gha
url=$(cat "$work/dir.url")
s3_url=$(cat "$work/s3.url")
gha_url=$(cat "$work/gha.url")

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
cat > "$work/sccache-s3-direct.env" <<E
export SCCACHE_DIR=$work/sccache-s3d SCCACHE_BUCKET=bench SCCACHE_ENDPOINT=http://127.0.0.1:$s3_port
export SCCACHE_REGION=us-east-1 SCCACHE_S3_USE_SSL=false SCCACHE_S3_KEY_PREFIX=direct
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
E
cat > "$work/sccache-s3-gateway.env" <<E
export SCCACHE_DIR=$work/sccache-s3g SCCACHE_WEBDAV_ENDPOINT=$s3_url/sccache
E
cat > "$work/sccache-gha-direct.env" <<E
export SCCACHE_DIR=$work/sccache-ghad SCCACHE_GHA_ENABLED=on ACTIONS_CACHE_SERVICE_V2=1
export ACTIONS_RESULTS_URL=$ACTIONS_RESULTS_URL ACTIONS_RUNTIME_TOKEN=$VOUCH_GHAC_MAIN_TOKEN
E
cat > "$work/sccache-gha-gateway.env" <<E
export SCCACHE_DIR=$work/sccache-ghag SCCACHE_WEBDAV_ENDPOINT=$gha_url/sccache
E

run_cfg() { # $1 = config name, $2 = launcher; prints seconds of a warm run
  (
    unset CCACHE_REMOTE_STORAGE CCACHE_REMOTE_ONLY SCCACHE_WEBDAV_ENDPOINT SCCACHE_BUCKET SCCACHE_GHA_ENABLED
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

args=()
for cfg in $CONFIGS; do args+=("${cfg%%:*}=${times[${cfg%%:*}]}"); done
python3 - "$work" "$TUS" "${args[@]}" <<'PY'
import json, statistics, sys
work, tus = sys.argv[1], int(sys.argv[2])
runs = dict(a.split("=", 1) for a in sys.argv[3:])
med = {}
for n, t in runs.items():
    xs = [float(x) for x in t.split()]
    med[n] = statistics.median(xs)
    print(f"{n:20s} warm median {med[n]*1000:7.0f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in xs))
def rate(n):
    text = open(f"{work}/{n}.stats").read()
    if n.startswith("sccache"):
        s = json.loads(text)["stats"]
        hits = sum(s["cache_hits"]["counts"].values()); misses = sum(s["cache_misses"]["counts"].values())
    else:
        kv = dict(l.split("\t") for l in text.splitlines() if "\t" in l)
        hits = int(kv.get("direct_cache_hit", 0)) + int(kv.get("preprocessed_cache_hit", 0)); misses = int(kv.get("cache_miss", 0))
    return hits, misses
for n in runs:
    h, m = rate(n)
    print(f"{n:20s} last warm run: {h} hits / {m} misses of {tus} TUs ({100*h/max(h+m,1):.1f}%)")
pairs = [("ccache", "directory", "ccache-local", "ccache-gateway"),
         ("sccache", "directory", "sccache-local", "sccache-gateway"),
         ("sccache", "S3 (moto)", "sccache-s3-direct", "sccache-s3-gateway"),
         ("sccache", "GitHub cache (double)", "sccache-gha-direct", "sccache-gha-gateway")]
for tool, store, direct, gw in pairs:
    if direct in med and gw in med:
        print(f"{tool:8s} {store:22s} gateway/direct: {med[gw]/med[direct]:.2f}x  (target <= 1.2x)")
PY
for name in dir s3 gha; do
  echo "gateway counters ($name): $(curl -s "$(cat "$work/$name.url")/_vouch/stats" 2>/dev/null || true)"
done
