#!/usr/bin/env bash
# Benchmark: `vouch inputs` over an unpacked CuPy sdist vs `find ... | xargs sha256sum` over the
# same files, side by side. Medians of RUNS runs; prints the ratio. Not a test.
# Needs the cupy sdist from PyPI (downloaded once into target/bench-cupy; 4 MB, small enough
# that SMOKE=1 (scripts/bench-lib.sh) uses it too: one run of each, no ratio judged).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=$(bench_runs 7)
VERSION=${CUPY_VERSION:-14.2.0}
bench_build
vouch=$bin/vouch
dl=$PWD/target/bench-cupy
if [ ! -d "$dl/cupy-$VERSION" ]; then
  mkdir -p "$dl"
  # From the simple index, checked against the sha256 it publishes (pip download would try to
  # build the sdist's metadata, which needs CuPy's whole build toolchain).
  link=$(curl -sf https://pypi.org/simple/cupy/ | grep -o "href=\"[^\"]*cupy-$VERSION.tar.gz#sha256=[0-9a-f]*\"" | head -n1 | sed 's/^href="//; s/"$//')
  [ -n "$link" ] || { echo "cupy-$VERSION.tar.gz not found on the index" >&2; exit 1; }
  curl -sf -o "$dl/cupy-$VERSION.tar.gz" "${link%%#*}"
  echo "${link##*sha256=}  $dl/cupy-$VERSION.tar.gz" | sha256sum -c --quiet
  tar -xzf "$dl/cupy-$VERSION.tar.gz" -C "$dl"
fi
src=$dl/cupy-$VERSION
profile=$PWD/pyproject-templates/cupy/vouch.toml
# The same file set vouch hashes, for the peer.
"$vouch" inputs --profile "$profile" --cell cuda13x-py3.12-linux-64 --source "$src" --explain \
  | sed -n 's/^file \(.*\) [0-9a-f]\{64\}$/\1/p' > "$dl/files.txt"
python3 - "$vouch" "$profile" "$src" "$dl/files.txt" "$RUNS" <<'PY'
import os, statistics, subprocess, sys, time
vouch, profile, src, files, runs = sys.argv[1:5] + [int(sys.argv[5])]
def t(cmd, **kw):
    s = time.perf_counter(); subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw); return time.perf_counter() - s
v_cmd = [vouch, "-q", "inputs", "--profile", profile, "--cell", "cuda13x-py3.12-linux-64", "--source", src]
peer = f"cd {src} && tr '\\n' '\\0' < {files} | xargs -0 -P2 -n 256 sha256sum"
smoke = os.environ["SMOKE"] == "1"
if not smoke:
    t(v_cmd); t(peer, shell=True)  # warm up
v = [t(v_cmd) for _ in range(runs)]
p = [t(peer, shell=True) for _ in range(runs)]
n = sum(1 for _ in open(files))
print(f"files hashed: {n}")
print(f"vouch inputs:                 median {statistics.median(v)*1000:7.1f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in v))
print(f"xargs -P2 sha256sum (same):   median {statistics.median(p)*1000:7.1f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in p))
if smoke:
    print("smoke run: debug build, one run, ratio not judged")
else:
    print(f"ratio vouch/peer: {statistics.median(v)/statistics.median(p):.2f}  (target < 1)")
PY
