#!/usr/bin/env bash
# Builds the `vouch` binary as a Python wheel (PyPI name vouch-build, see pyproject.toml) with a
# hash-pinned maturin, then proves it installs by hash: a fresh venv, `pip install
# --require-hashes --no-deps --no-index` of exactly that file, `vouch --version`.
#
# Usage: scripts/build-wheel.sh [OUT_DIR]      (default: target/wheels)
# Env:   CARGO_TARGET_DIR  (default: target/wheel, apart from the everyday target/ builds)
#        MATURIN_ARGS      `maturin build` flags [default on Linux: --zig --compatibility
#                          manylinux_2_28: zig links against glibc 2.28's symbol versions, so the
#                          wheel runs in the manylinux_2_28 images the generated workflows build
#                          in; a plain build here needs this host's glibc, e.g. 2.34]
#        SOURCE_DATE_EPOCH (default: the last commit touching the wheel's inputs) for its timestamps
#
# Prints the wheel, its size and `sha256:<hex>`, and the requirement line the generated
# workflows need (`vouch workflows generate` takes the hash).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$(realpath -m "${1:-target/wheels}")
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target/wheel}
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  # The last commit that touched what goes into the wheel, so commits elsewhere (profiles,
  # tests, scripts) leave its bytes alone.
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct -- src crates Cargo.toml Cargo.lock pyproject.toml README.md 2>/dev/null || true)
  SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-315532800}
fi
export SOURCE_DATE_EPOCH
# No build path in the binary (panic locations, debug info).
export RUSTFLAGS=${RUSTFLAGS:---remap-path-prefix=$root=/vouch --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo}

# maturin from PyPI, pinned by hash (the Linux x86_64 and aarch64 wheels of this version).
MATURIN_VERSION=1.16.0
MATURIN_SHA256=(
  837db2f4d93d4899c3ac393fb3cc9eebf35b6002336e5d574f4a4fb6c49fe283 # manylinux_2_12_x86_64.musllinux_1_1_x86_64
  e285ec9eb10243d45d10417178cb2eb76e0cbb184d0aa4378b503489fa12ee78 # manylinux_2_17_aarch64.musllinux_1_1_aarch64
)
# zig (PyPI `ziglang`, ~100 MB), the linker maturin's --zig uses to target an older glibc.
ZIG_VERSION=0.17.1
ZIG_SHA256=(
  ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54 # manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64
  b7c5f02fccd40f89b999ee16a1f5ddced56e6182370f8affe494bcf8a28cf07e # manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64
)
tools=$root/target/wheel-tools
if [ "$("$tools/bin/maturin" --version 2>/dev/null)" != "maturin $MATURIN_VERSION" ] \
    || [ "$("$tools/bin/python" -m ziglang version 2>/dev/null)" != "$ZIG_VERSION" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  {
    printf 'maturin==%s' "$MATURIN_VERSION"
    printf ' --hash=sha256:%s' "${MATURIN_SHA256[@]}"
    echo
    printf 'ziglang==%s' "$ZIG_VERSION"
    printf ' --hash=sha256:%s' "${ZIG_SHA256[@]}"
    echo
  } > "$tools/requirements.txt"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    --only-binary :all: --require-hashes -r "$tools/requirements.txt"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
linux_default=
if [ "$(uname -s)" = Linux ]; then linux_default="--zig --compatibility manylinux_2_28"; fi
# maturin finds zig as `python3 -m ziglang`, so the tools venv goes first on PATH.
# shellcheck disable=SC2086 # MATURIN_ARGS is a list of flags
PATH="$tools/bin:$PATH" "$tools/bin/maturin" build --release --locked --out "$work/dist" \
  ${MATURIN_ARGS-$linux_default}
shopt -s nullglob
wheels=("$work"/dist/*.whl)
if [ ${#wheels[@]} -ne 1 ]; then
  echo "build-wheel: expected one wheel, got ${#wheels[@]}" >&2
  exit 1
fi
name=$(basename "${wheels[0]}")
mkdir -p "$out"
cp "${wheels[0]}" "$out/$name"
wheel=$out/$name
sha=$(sha256sum "$wheel" | cut -d' ' -f1)
size=$(stat -c %s "$wheel")

# Install exactly this file, by hash, into a fresh venv, and run it.
python3 -m venv "$work/venv"
printf '%s --hash=sha256:%s\n' "$wheel" "$sha" > "$work/requirements.txt"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
  --no-deps --no-index -r "$work/requirements.txt"
version=$("$work/venv/bin/vouch" --version)
wheel_version=$(echo "$name" | cut -d- -f2)
if [ "$version" != "vouch $wheel_version" ]; then
  echo "build-wheel: \`vouch --version\` says \"$version\", the wheel is $wheel_version" >&2
  exit 1
fi

echo "wheel: $wheel"
echo "size: $size bytes"
echo "sha256:$sha  $name"
echo "installed by hash into a fresh venv: $version"
echo "requirement: vouch-build==$wheel_version --hash=sha256:$sha"
echo "build-wheel: $(($(date +%s) - start)) s"
