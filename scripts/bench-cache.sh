#!/usr/bin/env bash
# Benchmark: warm compiles through ccache and sccache, each against the same store directly and
# through vouch's scoped gateway, in one run:
#   - directory (the baseline): each tool on a local directory vs through a gateway on a
#     directory;
#   - Redis (a real redis-server on 127.0.0.1, started and stopped here): each tool's own Redis
#     client (ccache remote_storage redis://, sccache SCCACHE_REDIS_ENDPOINT) vs the tool
#     through a gateway on `--cache-store redis://` of the same server;
#   - S3 (moto in server mode) and the GitHub cache (the v2 double in vouch-testgh):
#     sccache's own client vs sccache through a gateway (ccache has no S3 or GitHub-cache
#     client, so it has no direct peer there; through the gateway it works on any store).
# The project: TUS synthetic C translation units sharing a header, and, when NVCC_TOOLKIT holds
# a CUDA toolkit (bin/nvcc), CU_TUS small .cu units compiled by nvcc through the same cache.
# Medians of RUNS warm runs each, configurations alternating; prints each configuration's ratio
# to its tool's local-directory time, each gateway/direct ratio, and the hit rates the tools
# report. A warm run with no hits fails the script (a broken configuration). Not a test.
#
#   SMOKE=1: one warm run of a few TUs, directory and Redis only, no nvcc, no ratio judged;
#            scripts/bench.sh runs it so a broken benchmark cannot land.
#   BIN=DIR: take vouch (and vouch-testghac) from DIR instead of `cargo build --release`.
# Run scripts/test.sh once first (it installs ccache, sccache and the S3 stand-in).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SMOKE:-0}" = 1 ]; then
  RUNS=1 TUS=${TUS:-6} CU_TUS=0
  CONFIGS=${CONFIGS:-"ccache-local:ccache ccache-gateway:ccache sccache-local:sccache sccache-gateway:sccache ccache-redis-direct:ccache ccache-redis-gateway:ccache sccache-redis-direct:sccache sccache-redis-gateway:sccache"}
fi
RUNS=${RUNS:-5}
CONFIGS=${CONFIGS:-"ccache-local:ccache ccache-gateway:ccache sccache-local:sccache sccache-gateway:sccache ccache-redis-direct:ccache ccache-redis-gateway:ccache sccache-redis-direct:sccache sccache-redis-gateway:sccache sccache-s3-direct:sccache sccache-s3-gateway:sccache sccache-gha-direct:sccache sccache-gha-gateway:sccache"}
TUS=${TUS:-200}
CU_TUS=${CU_TUS:-6}
NVCC_TOOLKIT=${NVCC_TOOLKIT:-/work/bench-cache/untrusted/toolchains/cuda-13.0-linux-64-63270aa6ea2557d2}
NVCC_ARCH=${NVCC_ARCH:-sm_80}
wants() { [[ " $CONFIGS " == *"$1"* ]]; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  exec 3>&- 2>/dev/null || true
  sccache --stop-server >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${BIN:-}" ]; then
  vouch=$BIN/vouch ghac=$BIN/vouch-testghac
else
  cargo build --release --locked -q
  if wants -gha-; then cargo build --release --locked -q -p vouch-testgh --bin vouch-testghac; fi
  vouch=$PWD/target/release/vouch ghac=$PWD/target/release/vouch-testghac
fi
export PATH=$PWD/target/test-tools/path:$PATH
needs=(ccache sccache)
if wants -s3-; then needs+=(moto_server); fi
if wants -redis-; then needs+=(redis-server); fi
for t in "${needs[@]}"; do
  command -v "$t" >/dev/null || { echo "needs $t on PATH (run scripts/test.sh once)" >&2; exit 1; }
done

nvcc=
if [ "$CU_TUS" -gt 0 ] && [ -d "$NVCC_TOOLKIT" ]; then
  nvcc=$(find "$NVCC_TOOLKIT" -path '*/bin/nvcc' -type f | head -n 1)
fi
[ -n "$nvcc" ] || CU_TUS=0

# The project: TUS translation units of a few hundred lines each, sharing a header, and
# CU_TUS CUDA units (a few kernels each, one shared header).
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
cat > "$src/kern.cuh" <<'H'
#include <cstdint>
__device__ inline float axpb(float a, float x, float b) { return a * x + b; }
H
for i in $(seq 1 "$CU_TUS"); do
  {
    echo '#include "kern.cuh"'
    for j in $(seq 1 8); do
      echo "__global__ void k${i}_${j}(float *x, const float *y, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) x[t] = axpb(${j}.0f, x[t], y[t]) + ${i}.0f; }"
      echo "void launch${i}_${j}(float *x, const float *y, int n) { k${i}_${j}<<<(n + 255) / 256, 256>>>(x, y, n); }"
    done
  } > "$src/cu$i.cu"
done
units=$((TUS + CU_TUS))

compile_c() { # $1 = launcher
  (cd "$src" && ls tu*.c | xargs -P "$(nproc)" -I{} $1 gcc -O2 -g -c {} -o {}.o)
}
compile_cu() { # $1 = launcher
  [ "$CU_TUS" -gt 0 ] || return 0
  (cd "$src" && ls cu*.cu | xargs -P "$(nproc)" -I{} $1 "$nvcc" -O2 -arch="$NVCC_ARCH" -c {} -o {}.o)
}

export SCCACHE_SERVER_PORT=4399 SCCACHE_IDLE_TIMEOUT=0
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return; sleep 0.05; done; echo "timed out waiting for $1" >&2; exit 1; }
wait_port() { for _ in $(seq 200); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.05; done; echo "timed out waiting for port $1" >&2; exit 1; }

# A trusted gateway signs what it writes and checks what it reads (issue 31): the seal key.
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/seal-key"
serve() { # $1 = name, then `cache serve` store flags; the gateway of a trusted push of main
  local name=$1
  shift
  "$vouch" -q cache serve "$@" --event push --ref refs/heads/main --seal-key-file "$work/seal-key" \
    --url-file "$work/$name.url" > /dev/null &
  pids+=($!)
  wait_file "$work/$name.url"
}
serve dir --cache-store "$work/store"
url=$(cat "$work/dir.url")
gateways=(dir)

# Redis: one server, no persistence; the tools' own clients and the gateway share it (the
# gateway's keys are under its scopes, `branch/main/@/…`, so nobody reads another's entries).
if wants -redis-; then
  redis_port=$(free_port)
  redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --daemonize no \
    --dir "$work" > "$work/redis.log" 2>&1 &
  pids+=($!)
  wait_port "$redis_port"
  serve redis --cache-store "redis://127.0.0.1:$redis_port"
  redis_url=$(cat "$work/redis.url")
  gateways+=(redis)
fi

# The S3 stand-in, one bucket; the same key pair for sccache's own client and the gateway's.
if wants -s3-; then
  emu_python=$(dirname "$(readlink -f "$(command -v moto_server)")")/python
  s3_port=$(free_port)
  moto_server -H 127.0.0.1 -p "$s3_port" > /dev/null 2>&1 &
  pids+=($!)
  wait_port "$s3_port"
  "$emu_python" -c 'import sys, boto3; boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="bench", aws_secret_access_key="bench").create_bucket(Bucket="bench")' "http://127.0.0.1:$s3_port"
  printf bench > "$work/s3-secret"
  serve s3 --cache-store "s3://bench/gateway?region=us-east-1&endpoint=http://127.0.0.1:$s3_port&access_key_id=bench" --password-file "$work/s3-secret"
  s3_url=$(cat "$work/s3.url")
  gateways+=(s3)
fi

# The GitHub cache double: it prints its URL and tokens, and serves while fd 3 stays open.
if wants -gha-; then
  mkfifo "$work/ghac-in"
  "$ghac" < "$work/ghac-in" > "$work/ghac.env" &
  pids+=($!)
  exec 3> "$work/ghac-in"
  wait_file "$work/ghac.env"
  for _ in $(seq 200); do grep -q '^$' "$work/ghac.env" && break; sleep 0.05; done
  # shellcheck disable=SC1091
  source "$work/ghac.env"
  ACTIONS_CACHE_SERVICE_V2=1 ACTIONS_RESULTS_URL=$ACTIONS_RESULTS_URL ACTIONS_RUNTIME_TOKEN=$VOUCH_GHAC_MAIN_TOKEN \
    serve gha --cache-store gha
  gha_url=$(cat "$work/gha.url")
  gateways+=(gha)
fi

# Each configuration: an env file; the first (cold) run fills the cache. ccache through a
# gateway runs remote-only, as `vouch build --cache ccache` does; so does its direct Redis
# peer, so both read the same kind of store and nothing local.
env_file() { cat > "$work/$1.env"; }
env_file ccache-local <<E
export CCACHE_DIR=$work/ccache-local
E
env_file ccache-gateway <<E
export CCACHE_DIR=$work/ccache-gw CCACHE_REMOTE_STORAGE=$url/ccache CCACHE_REMOTE_ONLY=true
E
env_file sccache-local <<E
export SCCACHE_DIR=$work/sccache-local
E
env_file sccache-gateway <<E
export SCCACHE_DIR=$work/sccache-gw SCCACHE_WEBDAV_ENDPOINT=$url/sccache
E
if wants -redis-; then
  env_file ccache-redis-direct <<E
export CCACHE_DIR=$work/ccache-rd CCACHE_REMOTE_STORAGE=redis://127.0.0.1:$redis_port CCACHE_REMOTE_ONLY=true
E
  env_file ccache-redis-gateway <<E
export CCACHE_DIR=$work/ccache-rg CCACHE_REMOTE_STORAGE=$redis_url/ccache CCACHE_REMOTE_ONLY=true
E
  env_file sccache-redis-direct <<E
export SCCACHE_DIR=$work/sccache-rd SCCACHE_REDIS_ENDPOINT=redis://127.0.0.1:$redis_port SCCACHE_REDIS_KEY_PREFIX=direct/
E
  env_file sccache-redis-gateway <<E
export SCCACHE_DIR=$work/sccache-rg SCCACHE_WEBDAV_ENDPOINT=$redis_url/sccache
E
fi
if wants -s3-; then
  env_file sccache-s3-direct <<E
export SCCACHE_DIR=$work/sccache-s3d SCCACHE_BUCKET=bench SCCACHE_ENDPOINT=http://127.0.0.1:$s3_port
export SCCACHE_REGION=us-east-1 SCCACHE_S3_USE_SSL=false SCCACHE_S3_KEY_PREFIX=direct
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
E
  env_file sccache-s3-gateway <<E
export SCCACHE_DIR=$work/sccache-s3g SCCACHE_WEBDAV_ENDPOINT=$s3_url/sccache
E
fi
if wants -gha-; then
  env_file sccache-gha-direct <<E
export SCCACHE_DIR=$work/sccache-ghad SCCACHE_GHA_ENABLED=on ACTIONS_CACHE_SERVICE_V2=1
export ACTIONS_RESULTS_URL=$ACTIONS_RESULTS_URL ACTIONS_RUNTIME_TOKEN=$VOUCH_GHAC_MAIN_TOKEN
E
  env_file sccache-gha-gateway <<E
export SCCACHE_DIR=$work/sccache-ghag SCCACHE_WEBDAV_ENDPOINT=$gha_url/sccache
E
fi

now() { date +%s.%N; }
run_cfg() { # $1 = config name, $2 = launcher; prints "<C seconds> <nvcc seconds>" of one run
  (
    unset CCACHE_REMOTE_STORAGE CCACHE_REMOTE_ONLY SCCACHE_WEBDAV_ENDPOINT SCCACHE_BUCKET \
      SCCACHE_GHA_ENABLED SCCACHE_REDIS_ENDPOINT
    # shellcheck disable=SC1090
    source "$work/$1.env"
    if [ "$2" = sccache ]; then sccache --stop-server >/dev/null 2>&1 || true; sccache --start-server >/dev/null 2>&1; sccache --zero-stats >/dev/null 2>&1; fi
    if [ "$2" = ccache ]; then ccache --zero-stats >/dev/null 2>&1; fi
    find "$src" -name '*.o' -delete
    t0=$(now)
    compile_c "$2"
    t1=$(now)
    compile_cu "$2"
    t2=$(now)
    if [ "$2" = sccache ]; then
      sccache --show-stats --stats-format json > "$work/$1.stats"
      sccache --stop-server >/dev/null 2>&1 || true
    else
      ccache --print-stats > "$work/$1.stats"
    fi
    echo "$(echo "$t1 - $t0" | bc -l) $(echo "$t2 - $t1" | bc -l)"
  )
}

echo "bench-cache: $TUS C units, $CU_TUS nvcc units${nvcc:+ ($nvcc, $NVCC_ARCH)}, $RUNS warm runs, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A cold times
for cfg in $CONFIGS; do
  cold[${cfg%%:*}]=$(run_cfg "${cfg%%:*}" "${cfg##*:}")   # cold: fill
done
for _ in $(seq "$RUNS"); do
  for cfg in $CONFIGS; do
    times[${cfg%%:*}]+="$(run_cfg "${cfg%%:*}" "${cfg##*:}" | tr ' ' /) "
  done
done

args=()
for cfg in $CONFIGS; do args+=("${cfg%%:*}=${cold[${cfg%%:*}]// //}=${times[${cfg%%:*}]}"); done
python3 - "$work" "$units" "${SMOKE:-0}" "${args[@]}" <<'PY'
import json, statistics, sys
work, units, smoke = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
med, cold = {}, {}
print(f"{'config':22s} {'cold s':>7s} {'warm median ms':>14s} {'(C':>7s} {'nvcc)':>7s} {'/local':>7s}  runs (total ms)")
rows = {}
for a in sys.argv[4:]:
    n, c, t = a.split("=", 2)
    runs = [tuple(float(x) for x in r.split("/")) for r in t.split()]
    cold[n] = sum(float(x) for x in c.split("/"))
    med[n] = (statistics.median(a + b for a, b in runs),
              statistics.median(a for a, _ in runs), statistics.median(b for _, b in runs))
    rows[n] = runs
def local(n):
    return "ccache-local" if n.startswith("ccache") else "sccache-local"
for n, runs in rows.items():
    base = med.get(local(n))
    ratio = f"{med[n][0] / base[0]:6.2f}x" if base else "      -"
    print(f"{n:22s} {cold[n]:7.1f} {med[n][0]*1000:14.0f} {med[n][1]*1000:7.0f} {med[n][2]*1000:7.0f} {ratio}  "
          + " ".join(f"{(a + b) * 1000:.0f}" for a, b in runs))
def rate(n):
    text = open(f"{work}/{n}.stats").read()
    if n.startswith("sccache"):
        j = json.loads(text); s = j["stats"]
        hits = sum(s["cache_hits"]["counts"].values()); misses = sum(s["cache_misses"]["counts"].values())
        # sccache skips the preprocessor on a hit only in its preprocessor cache mode, which it
        # turns on for a local disk cache alone.
        detail = (f"preprocessor cache mode {'on' if j.get('use_preprocessor_cache_mode') else 'off'}, "
                  f"hits {json.dumps(s['cache_hits']['adv_counts'], sort_keys=True)}")
    else:
        kv = dict(l.split("\t") for l in text.splitlines() if "\t" in l)
        g = lambda k: int(kv.get(k, 0))
        hits = g("direct_cache_hit") + g("preprocessed_cache_hit"); misses = g("cache_miss")
        detail = (f"direct (no preprocessor) {g('direct_cache_hit')}, preprocessed {g('preprocessed_cache_hit')}, "
                  f"remote hits {g('remote_storage_hit')}, local hits {g('local_storage_hit')}")
    return hits, misses, detail
print()
broken = []
for n in rows:
    h, m, d = rate(n)
    if h == 0:
        broken.append(n)
    # sccache counts each nvcc sub-step (cudafe++, cicc, ptxas) as a compile of its own.
    print(f"{n:22s} last warm run: {h} hits / {m} misses ({units} units; {100*h/max(h+m,1):.1f}%); {d}")
print()
pairs = [("ccache", "directory", "ccache-local", "ccache-gateway"),
         ("sccache", "directory", "sccache-local", "sccache-gateway"),
         ("ccache", "Redis", "ccache-redis-direct", "ccache-redis-gateway"),
         ("sccache", "Redis", "sccache-redis-direct", "sccache-redis-gateway"),
         ("sccache", "S3 (moto)", "sccache-s3-direct", "sccache-s3-gateway"),
         ("sccache", "GitHub cache (double)", "sccache-gha-direct", "sccache-gha-gateway")]
for tool, store, direct, gw in pairs:
    if direct in med and gw in med:
        judged = "" if smoke else "  (target <= 1.2x)"
        print(f"{tool:8s} {store:22s} gateway/direct: {med[gw][0]/med[direct][0]:.2f}x{judged}")
for a, b in [("ccache-redis-direct", "sccache-redis-direct"), ("ccache-redis-gateway", "sccache-redis-gateway")]:
    if a in med and b in med:
        print(f"same Redis store, {b.split('-', 2)[2]:8s}: sccache/ccache {med[b][0]/med[a][0]:.2f}x")
if broken:
    sys.exit(f"bench-cache: no hits on a warm run of {', '.join(broken)}: that configuration is broken")
PY
for name in "${gateways[@]}"; do
  echo "gateway counters ($name): $(curl -s "$(cat "$work/$name.url")/_vouch/stats" 2>/dev/null || true)"
done
