#!/usr/bin/env bash
# End to end on real CuPy: downloads the cupy sdist from PyPI (sha256-checked against the index),
# lays out the CUDA 13 toolkit from NVIDIA's PyPI wheels (`vouch toolchain install`), then builds
# the cuda13x cell for this machine's Python twice with ccache through the scoped gateway:
# cold (empty cache), then warm (cache populated, the sdist unpacked afresh, a new output dir).
# Then a third, cold build under another VOUCH_CACHE_DIR (another toolkit location, another
# venv) without any compiler cache: all three must give one digest, because every build
# compiles at the canonical work path (nvcc's module ids follow the source path).
# Prints the durations, the warm hit rate, the three digests, `vouch diff`, and how far
# `import cupy` gets after `pip install` of the wheel on a machine without a GPU.
#
# Heavy (~1.2 GB of toolkit wheels, ~5 min cold build on 2 cores): not part of .ci/run.
# Env: CUPY_VERSION (14.2.0), GENCODE (arch=compute_75,code=sm_75), JOBS (2),
#      CACHE (ccache|sccache, default ccache), E2E_DIR (target/cupy-e2e),
#      UNCACHED (1; 0 skips the third build and its comparison),
#      VOUCH_BIN (a vouch binary to use instead of building the release one),
#      SEED_TOOLKIT (an installed toolkit entry, `<cache>/<level>/toolchains/cuda-…`, to copy
#      into both cache dirs instead of downloading; it is checked against its seal on reuse).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${CUPY_VERSION:-14.2.0}
GENCODE=${GENCODE:-arch=compute_75,code=sm_75}
JOBS=${JOBS:-2}
CACHE=${CACHE:-ccache}
work=${E2E_DIR:-$PWD/target/cupy-e2e}
dl=$PWD/target/bench-cupy
profile=$PWD/pyproject-templates/cupy/vouch.toml

if [ -n "${VOUCH_BIN:-}" ]; then
  vouch=$VOUCH_BIN
else
  cargo build --release --locked -q
  vouch=$PWD/target/release/vouch
fi
sdist=$dl/cupy-$VERSION.tar.gz
if [ ! -f "$sdist" ]; then
  mkdir -p "$dl"
  link=$(curl -sf https://pypi.org/simple/cupy/ | grep -o "href=\"[^\"]*cupy-$VERSION.tar.gz#sha256=[0-9a-f]*\"" | head -n1 | sed 's/^href="//; s/"$//')
  [ -n "$link" ] || { echo "cupy-$VERSION.tar.gz not found on the index" >&2; exit 1; }
  curl -sf -o "$sdist.part" "${link%%#*}"
  echo "${link##*sha256=}  $sdist.part" | sha256sum -c --quiet
  mv "$sdist.part" "$sdist"
fi
echo "sdist: $sdist sha256:$(sha256sum "$sdist" | cut -d' ' -f1)"

py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
cell=cuda13x-py$py-linux-64
# A fixed commit id for the artifact name (the sdist has no git history).
sha=${SHA:-0000000000000000000000000000000000000000}
rm -rf "$work"
mkdir -p "$work"
# Trusted builds sign their cache entries with a key derived from the seal key (issue 31).
[ -s "$work/seal-key" ] || head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/seal-key"
export VOUCH_CACHE_DIR=${VOUCH_CACHE_DIR:-$PWD/target/cupy-e2e-cache}
other_cache=$work/another-user-cache
seed() { # $1 = cache dir
  [ -n "${SEED_TOOLKIT:-}" ] || return 0
  for level in trusted untrusted; do
    mkdir -p "$1/$level/toolchains"
    [ -e "$1/$level/toolchains/$(basename "$SEED_TOOLKIT")" ] ||
      cp -a "$SEED_TOOLKIT" "$1/$level/toolchains/"
  done
}
seed "$VOUCH_CACHE_DIR"
seed "$other_cache"

echo "== toolchain ($cell)"
t0=$(date +%s.%N)
"$vouch" toolchain install --profile "$profile" --cell "$cell"
t1=$(date +%s.%N)
echo "toolchain: $(python3 -c "print(f'{$t1-$t0:.1f}')") s"

build() { # $1 = out dir
  "$vouch" build --profile "$profile" --cell "$cell" --source "$sdist" --out "$1" \
    --set "CUPY_NVCC_GENERATE_CODE=$GENCODE" --set "CUPY_NUM_BUILD_JOBS=$JOBS" \
    --cache "$CACHE" --cache-store "$work/store" --event push --ref refs/heads/main \
    --seal-key-file "$work/seal-key" --sha "$sha" --json > "$1.json"
}
echo "== cold build"
build "$work/cold"
echo "== warm build"
build "$work/warm"
if [ "${UNCACHED:-1}" = 1 ]; then
echo "== cold build, another VOUCH_CACHE_DIR, no compiler cache"
VOUCH_CACHE_DIR=$other_cache "$vouch" toolchain install --profile "$profile" --cell "$cell"
VOUCH_CACHE_DIR=$other_cache "$vouch" build --profile "$profile" --cell "$cell" --source "$sdist" \
  --out "$work/uncached" --set "CUPY_NVCC_GENERATE_CODE=$GENCODE" --set "CUPY_NUM_BUILD_JOBS=$JOBS" \
  --json > "$work/uncached.json"

else
  cp "$work/cold.json" "$work/uncached.json"  # skipped: compares cold with itself
fi
python3 - "$work/cold.json" "$work/warm.json" "$work/uncached.json" <<'PY'
import json, sys
for label, path in zip(("cold", "warm", "uncached"), sys.argv[1:]):
    r = json.load(open(path))
    c = (r.get("cache") or {}).get("compiler_cache") or {}
    rate = (r.get("cache") or {}).get("hit_rate")
    print(f"{label}: build {r['seconds']['build']:.1f} s (total {r['seconds']['total']:.1f} s), "
          f"compiler cache {c.get('hits')} hits / {c.get('misses')} misses"
          + (f" ({rate*100:.1f}% hits)" if rate is not None else "")
          + f", {r['wheel']} {r['sha256']}")
    print(f"{label}: artifact {r['artifact']}; repair: {(r.get('repair') or {}).get('detail')}")
cold, warm, plain = (json.load(open(p)) for p in sys.argv[1:])
print(f"warm/cold build time: {warm['seconds']['build']/cold['seconds']['build']:.3f} (target <= 0.1)")
print("toolkits:", cold["toolchain"]["cuda_path"], "|", plain["toolchain"]["cuda_path"])
digests = {cold["sha256"], warm["sha256"], plain["sha256"]}
print("one digest for cold, warm and uncached:", "yes" if len(digests) == 1 else f"NO {sorted(digests)}")
PY
wheel_cold=$(ls "$work"/cold/*.whl)
wheel_warm=$(ls "$work"/warm/*.whl)
echo "== vouch diff cold warm"
"$vouch" diff "$wheel_cold" "$wheel_warm" || true
echo "== vouch diff cold uncached"
[ "${UNCACHED:-1}" = 1 ] && { "$vouch" diff "$wheel_cold" "$(ls "$work"/uncached/*.whl)" || true; }

echo "== pip install + import (no GPU here)"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel_cold"
"$work/venv/bin/python" - <<'PY' || true
import importlib.metadata as md
print("installed:", md.version("cupy-cuda13x"))
try:
    import cupy
    print("import cupy: ok, version", cupy.__version__)
except Exception as e:
    print("import cupy failed:", type(e).__name__, e)
    raise SystemExit(0)
try:
    n = cupy.cuda.runtime.getDeviceCount()
    print("devices:", n)
except Exception as e:
    print("device query:", type(e).__name__, e)
PY
