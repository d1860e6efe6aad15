#!/usr/bin/env bash
# Runner-minutes the generated workflows spend getting vouch onto runners (issue 32, item 8),
# for a push and for a pull request's /test build, before and after building vouch once per run.
#
# Reads the workflow files themselves: every job of vouch-build.yml (and, for a pull request,
# of vouch-sign.yml) that runs for the event, times its matrix (one job per planned cell), and
# charges each for how it gets vouch:
#   compile   a `cargo install` step that runs:           $COMPILE_MIN (default 6: issue 32 and
#             FIELD.md measure 5-8 min on a hosted runner)
#   restore   a pull request's job that restores vouch from the Actions cache (warm cache):
#             $RESTORE_MIN (default 0.5); with --cold-cache a pull request's job compiles instead
#   download  this run's binary from its artifact, checked by sha256: $DOWNLOAD_MIN (default 0.25)
# Nothing else of the jobs (the builds themselves) is counted: they are the same before and after.
#
# Usage: scripts/runner-minutes.sh [--before REV] [--after REV] [--cold-cache] [--cells N]
#   --before REV  the workflows before, from the CuPy snapshots committed at REV (default: the
#                 commit before the one that introduced the per-run build, f6cf10d^)
#   --after REV   the workflows after, from the snapshots committed at REV (default: generated
#                 by target/debug/vouch from this checkout's CuPy profile)
#   --cells N     planned cells (default: `vouch plan` of the CuPy profile, with target/debug/vouch)
# After: the CuPy profile's workflows as this checkout generates them (target/debug/vouch).
set -euo pipefail
cd "$(dirname "$0")/.."
before_rev=f6cf10d^
after_rev=""
cold=0
cells=""
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before_rev=$2; shift 2 ;;
    --after) after_rev=$2; shift 2 ;;
    --cold-cache) cold=1; shift ;;
    --cells) cells=$2; shift 2 ;;
    *) echo "runner-minutes: unknown argument $1" >&2; exit 2 ;;
  esac
done
profile=pyproject-templates/cupy/vouch.toml
vouch=target/debug/vouch
if [ ! -x "$vouch" ] && { [ -z "$after_rev" ] || [ -z "$cells" ]; }; then
  echo "runner-minutes: build vouch first (cargo build --bin vouch), or pass --after REV and --cells N" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/before" "$tmp/after"
snapshot() { # REV FILE: the workflow file as the CuPy snapshot at REV has it (after insta's header)
  git show "$1:crates/vouch-workflows/tests/snapshots/workflows__$2.snap" \
    | awk 'n >= 2 { print; next } /^---$/ { n++ }'
}
for f in vouch-build.yml vouch-sign.yml; do
  snapshot "$before_rev" "$f" > "$tmp/before/$f"
  if [ -n "$after_rev" ]; then snapshot "$after_rev" "$f" > "$tmp/after/$f"; fi
done
if [ -z "$after_rev" ]; then
  "$vouch" workflows generate --profile "$profile" --out "$tmp/after" >/dev/null 2>&1
fi
if [ -z "$cells" ]; then
  cells=$("$vouch" plan --profile "$profile" --format github --event push \
    | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["include"]))')
fi
python3 - "$tmp" "$cells" "$cold" "${COMPILE_MIN:-6}" "${RESTORE_MIN:-0.5}" "${DOWNLOAD_MIN:-0.25}" <<'PY'
import sys, yaml
tmp, cells, cold = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
compile_min, restore_min, download_min = map(float, sys.argv[4:7])

def runs_for(job, event):
    """Whether a job runs for `event`, from its `if:` (the generated files' plain forms)."""
    cond = " ".join(str(job.get("if", "")).split())
    if "||" not in cond and "github.event_name == 'push'" in cond:
        return event == "push"
    if "||" not in cond and "github.event_name == 'pull_request'" in cond:
        return event == "pull_request"
    return True

def width(job):
    m = (job.get("strategy") or {}).get("matrix")
    return cells if isinstance(m, str) and "fromJson" in m else 1

def cost(job, event):
    """(compiles, restores, downloads) for one job of this event."""
    names = [s.get("name", "") for s in job.get("steps", [])]
    runs = [str(s.get("run", "")) for s in job.get("steps", [])]
    if any("cargo install" in r for r in runs):
        restorable = any(n.startswith("Restore vouch") for n in names)
        if event == "pull_request" and restorable and not cold:
            return (0, 1, 0)
        return (1, 0, 0)
    if any(n.startswith("Download vouch") for n in names):
        return (0, 0, 1)
    return (0, 0, 0)

def run_cost(path, event):
    doc = yaml.safe_load(open(path))
    total = [0, 0, 0]
    for job in doc["jobs"].values():
        if not runs_for(job, event):
            continue
        c = cost(job, event)
        for i in range(3):
            total[i] += c[i] * width(job)
    return total

def minutes(c):
    return c[0] * compile_min + c[1] * restore_min + c[2] * download_min

print(f"cells: {cells}; compile {compile_min} min, cache restore {restore_min} min, download {download_min} min"
      + ("; pull requests' cache cold" if cold else "; pull requests' cache warm"))
print(f"{'':10} {'':8} {'compiles':>8} {'restores':>8} {'downloads':>9} {'minutes':>8}")
for label, parts in (("push", [("vouch-build.yml", "push")]),
                     ("PR /test", [("vouch-build.yml", "pull_request"), ("vouch-sign.yml", "workflow_run")])):
    for side in ("before", "after"):
        total = [0, 0, 0]
        for f, event in parts:
            c = run_cost(f"{tmp}/{side}/{f}", event)
            total = [a + b for a, b in zip(total, c)]
        print(f"{label:10} {side:8} {total[0]:>8} {total[1]:>8} {total[2]:>9} {minutes(total):>8.1f}")
PY
