#!/usr/bin/env bash
# Runs the generated workflows' `source` install step, exactly as rendered into vouch-build.yml,
# with this checkout standing in for vouch's git URL (cargo install --git file://...). Proves the
# step installs a working vouch at the pinned commit, without GitHub or the network.
#
# Usage: scripts/install-route-source.sh [WORKFLOWS_DIR]   (default: generates into a temp dir)
# Env:   CARGO_TARGET_DIR (default: target/wheel, shared with scripts/build-wheel.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wf=${1:-}
if [ -z "$wf" ]; then
  wf=$tmp/workflows
  target/debug/vouch workflows generate --profile pyproject-templates/cupy/vouch.toml --out "$wf" 2>/dev/null >/dev/null
fi
# The step's script: the `run: |` block under its name, de-indented.
awk '
  /- name: Install vouch \(cargo install --locked, pinned commit\)/ { grab = 1; next }
  grab && /^        run: \|/ { body = 1; next }
  body && /^      - / { exit }
  body { sub(/^          /, ""); print }
' "$wf/vouch-build.yml" > "$tmp/step.sh"
if ! grep -q 'cargo install --locked --git "$VOUCH_GIT" --rev "$VOUCH_REV"' "$tmp/step.sh"; then
  echo "install-route-source: the step was not found in $wf/vouch-build.yml" >&2
  exit 1
fi
echo "--- the generated step:"
cat "$tmp/step.sh"
echo "---"
export VOUCH_GIT="file://$root"
VOUCH_REV=$(git rev-parse HEAD)
export VOUCH_REV
# Installed where the runner's ~/.cargo/bin would be, with nothing named vouch on PATH first.
export CARGO_INSTALL_ROOT=$tmp/cargo
export PATH="$CARGO_INSTALL_ROOT/bin:/usr/local/bin:/usr/bin:/bin:${CARGO_HOME:-$HOME/.cargo}/bin"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target/wheel}
# scripts/build-wheel.sh's flags, so the dependencies it compiled are reused.
export RUSTFLAGS=${RUSTFLAGS:---remap-path-prefix=$root=/vouch --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo}
SECONDS=0
bash -euo pipefail "$tmp/step.sh"
echo "install-route-source: vouch $VOUCH_REV installed by the generated step in ${SECONDS} s"
"$CARGO_INSTALL_ROOT/bin/vouch" workflows --help >/dev/null
