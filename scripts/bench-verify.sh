#!/usr/bin/env bash
# Benchmark: `vouch verify` side by side with `sha256sum` (100 MB wheel, keyless bundle from
# the local Sigstore instance) and with sigstore-python's `verify identity --offline` (a real
# production bundle over a small file). Medians of RUNS runs each, alternating; prints ratios.
# Not a test. SMOKE=1 (scripts/bench-lib.sh): a 1 MB wheel, one run of each, no ratio judged.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=$(bench_runs 9)
work=$(mktemp -d)
cleanup() { exec 3>&- 2>/dev/null || true; [ -n "${server_pid:-}" ] && { kill "$server_pid" 2>/dev/null || true; }; rm -rf "$work"; }
trap cleanup EXIT

bench_build
vouch=$bin/vouch
venv=$PWD/target/bench-sigstore-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q sigstore==4.5.1
fi

# A 100 MB "wheel" (content does not matter to verification: it is hashed).
mb=100
smoke && mb=1
wheel=$work/bench_wheel-1.0-cp311-cp311-linux_x86_64.whl
head -c $((mb * 1000000)) /dev/urandom > "$wheel"

# Local Sigstore instance: serves until its stdin (fd 3) closes.
sha=0123456789abcdef0123456789abcdef01234567
mkfifo "$work/ctl"
"$bin/vouch-testsig" "$work/sig" bench/wheel "$sha" < "$work/ctl" > "$work/url" &
server_pid=$!
exec 3> "$work/ctl"
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(cat "$work/url")
GITHUB_ACTIONS=true GITHUB_REPOSITORY=bench/wheel GITHUB_REPOSITORY_ID=1001 GITHUB_REPOSITORY_OWNER_ID=2002 \
GITHUB_WORKFLOW_REF=bench/wheel/.github/workflows/ci.yml@refs/heads/main GITHUB_REF=refs/heads/main \
GITHUB_SHA=$sha GITHUB_EVENT_NAME=push GITHUB_RUN_ID=6 GITHUB_RUN_ATTEMPT=1 RUNNER_ENVIRONMENT=github-hosted \
  "$vouch" -q attest "$wheel" --out "$work/wheel.sigstore.json" --fulcio-url "$url" --rekor-url "$url" \
  --oidc-token-file "$work/sig/token.jwt" > /dev/null
exec 3>&-

fx=tests/fixtures/sigstore
"$venv/bin/python" - "$vouch" "$venv/bin/python" "$wheel" "$work" "$RUNS" "$fx" "$mb" <<'PY'
import os, statistics, subprocess, sys, time
vouch, py, wheel, work, runs, fx, mb = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
smoke = os.environ["SMOKE"] == "1"

def timed(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-verify: {cmd[0]} exited {p.returncode}: {' '.join(cmd)}\n{p.stderr}")
    return time.perf_counter() - t

# Both verifiers are asked the same question of each bundle: the signer identity (the
# certificate's SAN, which is the signing workflow) and the OIDC issuer; vouch also requires the
# source repository, which it refuses to verify a keyless bundle without.
big_vouch = [vouch, "-q", "verify", wheel, "--bundle", f"{work}/wheel.sigstore.json",
             "--trust-root", f"{work}/sig/trusted_root.json", "--repo", "bench/wheel",
             "--signer-workflow", "bench/wheel/.github/workflows/ci.yml@refs/heads/main"]
big_sha = ["sha256sum", wheel]
small = f"{fx}/signed-package-2.1.0-hb0f4dca_0.conda"
bundle = f"{fx}/conda-attestation.sigstore.json"
issuer = "https://token.actions.githubusercontent.com"
workflow = "prefix-dev/sigstore-example/.github/workflows/action.yaml@refs/heads/main"
small_vouch = [vouch, "-q", "verify", small, "--bundle", bundle, "--offline",
               "--repo", "prefix-dev/sigstore-example", "--signer-workflow", workflow, "--issuer", issuer,
               "--predicate-type", "https://schemas.conda.org/attestations-publish-1.schema.json"]
small_py = [py, "-m", "sigstore", "verify", "identity", "--offline", "--bundle", bundle,
            "--cert-identity", f"https://github.com/{workflow}", "--cert-oidc-issuer", issuer, small]

cmds = {"big_vouch": big_vouch, "big_sha": big_sha, "small_vouch": small_vouch, "small_py": small_py}
if not smoke:
    for cmd in cmds.values():  # warm caches, and fail early
        timed(cmd)
r = {k: [] for k in cmds}
for _ in range(runs):
    for k, cmd in cmds.items():
        r[k].append(timed(cmd))
m = {k: statistics.median(v) for k, v in r.items()}
fmt = lambda k: f"median {m[k]*1000:8.1f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in r[k])
print(f"{mb:3d} MB wheel, vouch verify (keyless bundle, local instance): {fmt('big_vouch')}")
print(f"{mb:3d} MB wheel, sha256sum:                                     {fmt('big_sha')}")
print(f"small file,   vouch verify (production bundle, offline):     {fmt('small_vouch')}")
print(f"small file,   sigstore-python verify identity --offline:     {fmt('small_py')}")
if smoke:
    print("smoke run: debug build, one run, ratios not judged")
else:
    print(f"ratio vouch/sha256sum on 100 MB: {m['big_vouch']/m['big_sha']:.2f}x  (target <= 1.3x)")
    print(f"ratio sigstore-python/vouch on small file: {m['small_py']/m['small_vouch']:.1f}x  (target >= 10x)")
PY
