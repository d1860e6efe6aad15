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
# SMOKE=1 (scripts/bench-lib.sh; CI has no CUDA toolkit and does not download one): the same
# commands on the smallest toolkit that takes the same path, one run, no ratio judged. It is a
# 500-file toolkit wheel made here and installed through real pip from a local folder, for a
# linux-aarch64 cell, whose nvcc is checked by its ELF header and never run, so any host lays
# it out; the reuse (manifest, seal check, layout check) is the code the real toolkit goes through.
#
# Usage: scripts/bench-reuse.sh [CELL]   (default cuda13x-py3.11-linux-64)
# Env:   VOUCH_CACHE_DIR (default target/bench-cache), RUNS, VOUCH (default target/release/vouch)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
runs=$(bench_runs 5)
if smoke; then
  bench_build
  vouch=$bin/vouch
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  cell=cuda13x-py$pyver-linux-aarch64
  python3 - "$work/profile" "$pyver" <<'PY'
import base64, hashlib, os, sys, zipfile
out, pyver = sys.argv[1], sys.argv[2]
os.makedirs(f"{out}/links")
nvcc = bytearray(64)  # an aarch64 ELF header: all the layout check reads of nvcc
nvcc[:7] = b"\x7fELF\x02\x01\x01"
nvcc[16], nvcc[18:20] = 2, (183).to_bytes(2, "little")
files = {"nvidia/cu13/bin/nvcc": bytes(nvcc), "nvidia/cu13/lib/libcudart.so.13": b"not really a library"}
for i in range(498):
    files[f"nvidia/cu13/include/smoke{i:03d}.h"] = b"#pragma once\n" * (i + 1)
di = "nvidia_smoke_nvcc-13.0.0.dist-info"
files[f"{di}/METADATA"] = b"Metadata-Version: 2.1\nName: nvidia-smoke-nvcc\nVersion: 13.0.0\n"
files[f"{di}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: bench-reuse\nRoot-Is-Purelib: false\nTag: py3-none-manylinux_2_17_aarch64\n"
b64 = lambda d: base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
files[f"{di}/RECORD"] = "".join(f"{n},sha256={b64(d)},{len(d)}\n" for n, d in files.items()).encode() + f"{di}/RECORD,,\n".encode()
wheel = f"{out}/links/nvidia_smoke_nvcc-13.0.0-py3-none-manylinux_2_17_aarch64.whl"
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in files.items():
        z.writestr(n, d)
with open(wheel, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
with open(f"{out}/cuda.txt", "w") as f:
    f.write(f"nvidia-smoke-nvcc==13.0.0 --hash=sha256:{digest}\n")
with open(f"{out}/vouch.toml", "w") as f:
    f.write(f"""project = "smoke"
python = ["{pyver}"]
platforms = ["linux-aarch64"]

[runners]
linux-aarch64 = "ubuntu-24.04-arm"

[flavors.cuda13x]
package = "smoke-cuda13x"
cuda = "13.0"

[flavors.cuda13x.toolchain.linux-aarch64]
wheels = "cuda.txt"
root = "nvidia/cu13"

[inputs]
include = ["setup.py"]
""")
PY
  profile=$work/profile/vouch.toml
  export VOUCH_CACHE_DIR=$work/cache PIP_NO_INDEX=1 PIP_FIND_LINKS=$work/profile/links
else
  cell=${1:-cuda13x-py3.11-linux-64}
  export VOUCH_CACHE_DIR=${VOUCH_CACHE_DIR:-$PWD/target/bench-cache}
  if [ -n "${VOUCH:-}" ]; then
    vouch=$VOUCH
  else
    bench_build
    vouch=$bin/vouch
  fi
  profile=pyproject-templates/cupy/vouch.toml
fi

json=$("$vouch" -q toolchain install --profile "$profile" --cell "$cell" --json)
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
smoke && echo "smoke run: debug build, a 500-file stand-in toolkit, one run, ratios not judged"
printf 'median of %d runs: before (sizes) %.3f s; vouch seal check %.3f s (whole command %.3f s); full sha256 %.3f s\n' "$runs" "$b" "$c" "$v" "$h"
smoke || echo "ratio check/before $(div "$c" "$b"), check/full-hash $(div "$c" "$h")"
