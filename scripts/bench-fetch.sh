#!/usr/bin/env bash
# Benchmark: `vouch fetch` (API lookups, download, digest check, safe extraction, keyless
# verification) of a 100 MB artifact from the project's fake GitHub API on loopback, against a
# plain `curl` download + `unzip` of the same artifact from the same server. Medians of RUNS
# runs each, alternating; prints the ratio. Not a test.
# SMOKE=1 (scripts/bench-lib.sh): a 1 MB artifact, one run of each, no ratio judged.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=$(bench_runs 7)
work=$(mktemp -d)
pids=()
cleanup() { exec 3>&- 4>&- 2>/dev/null || true; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

bench_build
command -v curl >/dev/null && command -v unzip >/dev/null || { echo "needs curl and unzip" >&2; exit 1; }

repo=cupy/cupy
sha=1111111111111111111111111111111111111111
name=cupy-cuda13x-py3.12-linux-64-$sha
wheel=$work/cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl
# 100 MB: half incompressible, half text-like, as a CUDA wheel is.
half=50000000
smoke && half=500000
{ head -c $half /dev/urandom; head -c $half < <(yes "cupy kernel source line"); } > "$wheel"

mkfifo "$work/sig-ctl" "$work/gh-ctl"
"$bin/vouch-testsig" "$work/sig" "$repo" "$sha" < "$work/sig-ctl" > "$work/sig-url" &
pids+=($!)
exec 3> "$work/sig-ctl"
for _ in $(seq 100); do [ -s "$work/sig-url" ] && break; sleep 0.05; done
sig=$(cat "$work/sig-url")
GITHUB_ACTIONS=true GITHUB_REPOSITORY=$repo GITHUB_WORKFLOW_REF=$repo/.github/workflows/ci.yml@refs/heads/main \
GITHUB_REF=refs/heads/main GITHUB_SHA=$sha GITHUB_EVENT_NAME=push GITHUB_RUN_ID=6 GITHUB_RUN_ATTEMPT=1 \
RUNNER_ENVIRONMENT=github-hosted \
  "$bin/vouch" -q attest "$wheel" --out "$wheel.sigstore.json" --fulcio-url "$sig" --rekor-url "$sig" \
  --oidc-token-file "$work/sig/token.jwt" > /dev/null
# vouch-testsig's token names .github/workflows/ci.yml: the run is published as that workflow's,
# and `vouch fetch` is told to take its artifacts from it.
workflow=.github/workflows/ci.yml
"$bin/vouch" -q publish "$wheel" "$wheel.sigstore.json" --store "$work/store" --name "$name" --repo "$repo" \
  --workflow "$workflow" --run-id 6 --workflow-id 77 --sha "$sha" > /dev/null
# The token the fake API demands; `vouch fetch` reads (and keeps) it from a file.
echo -n "bench-token" > "$work/token"

"$bin/vouch-testgh" "$work/store" bench-token < "$work/gh-ctl" > "$work/gh-url" &
pids+=($!)
exec 4> "$work/gh-ctl"
for _ in $(seq 100); do [ -s "$work/gh-url" ] && break; sleep 0.05; done
gh=$(cat "$work/gh-url")
id=$(ls "$work/store/artifacts" | grep -m1 '\.json$' | sed 's/\.json$//')

python3 - "$bin/vouch" "$gh" "$work" "$RUNS" "$id" "$repo" "$sha" "$name" "$workflow" <<'PY'
import os, shutil, statistics, subprocess, sys, time
vouch, gh, work, runs, art_id, repo, sha, name, workflow = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]

def vouch_fetch():
    out = f"{work}/vouch-out"; shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([vouch, "-q", "fetch", "--repo", repo, "--workflow", workflow, "--event", "push", "--sha", sha, "--artifact-name", name,
                    "--api-url", gh, "--token-file", f"{work}/token", "--keep-token-file",
                    "--trust-root", f"{work}/sig/trusted_root.json", "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t

def curl_unzip():
    out = f"{work}/curl-out"; shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    # Two steps: `curl -L` would forward the Authorization header to the blob URL (same host
    # here), which is exactly what must not happen.
    loc = subprocess.run(["curl", "-sSf", "-H", "Authorization: Bearer bench-token", "-H", "X-GitHub-Api-Version: 2022-11-28",
                          "-o", "/dev/null", "-w", "%{redirect_url}", f"{gh}/repos/{repo}/actions/artifacts/{art_id}/zip"],
                         check=True, capture_output=True, text=True).stdout
    subprocess.run(["curl", "-sSf", "-o", f"{work}/a.zip", loc], check=True)
    subprocess.run(["unzip", "-q", "-o", f"{work}/a.zip", "-d", out], check=True)
    return time.perf_counter() - t

smoke = os.environ["SMOKE"] == "1"
if not smoke:
    vouch_fetch(); curl_unzip()   # warm up, and fail early
v, c = [], []
for _ in range(runs):
    v.append(vouch_fetch()); c.append(curl_unzip())
mv, mc = statistics.median(v), statistics.median(c)
print(f"vouch fetch (4 API calls, download, digest, extract, verify): median {mv*1000:.0f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in v))
print(f"curl (302 by hand) + unzip (no checks at all):               median {mc*1000:.0f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in c))
if smoke:
    print("smoke run: debug build, one run, ratio not judged")
else:
    print(f"ratio vouch/curl+unzip: {mv/mc:.2f}x  (target <= 1.3x)")
PY
