#!/usr/bin/env bash
# Lays out a CuPy cell's toolkit for another platform than this machine's, from the real pinned
# files, and shows what its compiler driver is built for. Default: the linux-aarch64 CUDA 13
# toolkit from NVIDIA's PyPI wheels (pip told the aarch64 tags, every wheel sha256-checked,
# unpacked, the aarch64 libcuda link stub written), then `readelf -h bin/nvcc`, which must say
# `Machine: AArch64`.
#
# Heavy (~1.4 GB of wheels, ~3 GB unpacked): not part of the default test suite.
# Env: CELL (cuda13x-py3.12-linux-aarch64), MACHINE (the readelf Machine: to expect, AArch64),
#      CHECK_DIR (target/toolchain-layout-check; removed first), VOUCH (a built vouch binary;
#      default: cargo build, debug), KEEP=1 keeps the laid-out tree,
#      PACKAGES: lay out only these packages of the cell's pinned requirements file (same pins,
#      e.g. "nvidia-cuda-nvcc nvidia-cuda-crt nvidia-nvvm nvidia-cuda-runtime nvidia-cuda-cccl",
#      ~100 MB) when the disk has no room for the whole toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
cell=${CELL:-cuda13x-py3.12-linux-aarch64}
machine=${MACHINE:-AArch64}
work=${CHECK_DIR:-$PWD/target/toolchain-layout-check}
profile=$PWD/pyproject-templates/cupy/vouch.toml
if [ -z "${VOUCH:-}" ]; then
  cargo build --locked -q --bin vouch
  VOUCH=${CARGO_TARGET_DIR:-$PWD/target}/debug/vouch
fi
command -v readelf >/dev/null || { echo "readelf (binutils) is needed" >&2; exit 1; }

if [ -d "$work" ]; then chmod -R u+w "$work"; rm -rf "$work"; fi
mkdir -p "$work"
if [ -n "${PACKAGES:-}" ]; then
  # A copy of the profile whose requirement files keep only PACKAGES' lines, hashes untouched.
  cp -r "$(dirname "$profile")" "$work/profile"
  profile=$work/profile/vouch.toml
  for req in "$work"/profile/toolchains/*.txt; do
    python3 - "$req" $PACKAGES <<'PY'
import sys
path, keep = sys.argv[1], set(sys.argv[2:])
lines = open(path).read().splitlines()
kept = [l for l in lines if l.startswith("#") or l.split("==")[0] in keep]
open(path, "w").write("\n".join(kept) + "\n")
PY
  done
  echo "== only: $PACKAGES"
fi
echo "== host: $(uname -m); cell: $cell"
"$VOUCH" toolchain install --dry-run --cell "$cell" --profile "$profile"

start=$(date +%s)
"$VOUCH" toolchain install --json --cell "$cell" --profile "$profile" --cache-dir "$work/cache" \
  > "$work/installed.json"
echo "== installed in $(( $(date +%s) - start )) s"
python3 - "$work/installed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("platform", "machine", "nvcc", "files", "cuda_path", "key"):
    print(f"{k}: {d.get(k)}")
for c in d["components"]:
    print(f"  {c['sha256']}  {c['file']}")
PY
cuda=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cuda_path"])' "$work/installed.json")
echo "== readelf -h $cuda/bin/nvcc"
readelf -h "$cuda/bin/nvcc" | tee "$work/readelf.txt"
echo "== readelf -h $cuda/lib/stubs/libcuda.so (the link stub vouch wrote)"
readelf -h "$cuda/lib/stubs/libcuda.so" | grep -E "Type:|Machine:"
readelf -d "$cuda/lib/stubs/libcuda.so" | grep SONAME
echo "== du: $(du -sh "$work/cache" | cut -f1)"
grep -Eq "Machine:[[:space:]]+$machine\$" "$work/readelf.txt" \
  || { echo "FAIL: bin/nvcc is not $machine" >&2; exit 1; }
echo "OK: bin/nvcc is $machine"
if [ "${KEEP:-}" != 1 ]; then
  chmod -R u+w "$work" && rm -rf "$work"
fi
