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
# The commit the workflows pin (their `VOUCH_REV`), which must be in this clone's history: the
# step installs exactly it, and every `vouch` call the workflows make is then checked against
# its --help below. A clone without it (shallow) installs HEAD instead and says so.
pinned=$(sed -n "s/^  VOUCH_REV: '\([0-9a-f]\{40\}\)'\$/\1/p" "$wf/vouch-build.yml" | head -n1)
if [ -z "$pinned" ]; then
  echo "install-route-source: no VOUCH_REV in $wf/vouch-build.yml" >&2
  exit 1
fi
if git cat-file -e "$pinned^{commit}" 2>/dev/null; then
  VOUCH_REV=$pinned
else
  VOUCH_REV=$(git rev-parse HEAD)
  echo "install-route-source: WARNING: the pinned commit $pinned is not in this clone; installing HEAD ($VOUCH_REV) instead" >&2
fi
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

# Every command line the workflows run, as this checkout's vouch finds them, against the
# installed (pinned) vouch's own --help: each command exists and lists each flag.
(cd "$root" && target/debug/vouch workflows calls --profile pyproject-templates/cupy/vouch.toml --json) > "$tmp/calls.json"
python3 - "$CARGO_INSTALL_ROOT/bin/vouch" "$tmp/calls.json" <<'PY'
import json, re, subprocess, sys
vouch, calls = sys.argv[1], json.load(open(sys.argv[2]))
helps, missing = {}, []
for c in calls:
    cmd = tuple(c["command"])
    if cmd not in helps:
        r = subprocess.run([vouch, *cmd, "--help"], capture_output=True, text=True)
        helps[cmd] = r.stdout if r.returncode == 0 else None
    text = helps[cmd]
    for flag in c["flags"]:
        if text is None or not re.search(r"(^|[\s,])" + re.escape(flag) + r"([\s=<]|$)", text, re.M):
            missing.append(f"{c['file']} {c['job']}: vouch {' '.join(cmd)} {flag}")
if missing:
    print("install-route-source: the installed vouch lacks what the workflows call:", *sorted(set(missing)), sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"install-route-source: the installed vouch accepts all {len(calls)} calls of the workflows")
PY
