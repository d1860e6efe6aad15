#!/usr/bin/env bash
# Benchmark: `vouch audit` of 200 synthetic 1 MB key-signed wheels vs running `vouch verify`
# on each of them, side by side. Medians of RUNS runs; prints the ratio. Not a test.
# SMOKE=1 (scripts/bench-lib.sh): 5 wheels, one run of each, no ratio judged.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=$(bench_runs 5)
N=${N:-200}
smoke && N=5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench_build
vouch=$bin/vouch

mkdir -p "$work/rel"
"$vouch" -q keygen --out "$work/k.pem" > /dev/null
python3 - "$work/rel" "$N" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, f"synth{i:03d}-1.0-py3-none-any.whl"), "wb") as f:
        f.write(os.urandom(1 << 20))
PY
# One statement over all the wheels, its bundle next to each (as a release job would attach it).
"$vouch" -q attest "$work"/rel/*.whl --out "$work/all.sigstore.json" --signer "key:$work/k.pem" \
  --local --repo bench/release --sha 0123456789abcdef0123456789abcdef01234567 --runner github-hosted > /dev/null
for w in "$work"/rel/*.whl; do cp "$work/all.sigstore.json" "$w.sigstore.json"; done

python3 - "$vouch" "$work" "$RUNS" <<'PY'
import glob, os, statistics, subprocess, sys, time
vouch, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
smoke = os.environ["SMOKE"] == "1"
wheels = sorted(glob.glob(f"{work}/rel/*.whl"))
def audit():
    t = time.perf_counter()
    subprocess.run([vouch, "-q", "audit", f"{work}/rel", "--key", f"{work}/k.pem.pub", "--repo", "bench/release"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
def verify_each():
    t = time.perf_counter()
    for w in wheels:
        subprocess.run([vouch, "-q", "verify", w, "--bundle", w + ".sigstore.json", "--key", f"{work}/k.pem.pub",
                        "--repo", "bench/release"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
if not smoke:
    audit(); verify_each()  # warm up
a, v = [], []
for _ in range(runs):
    a.append(audit()); v.append(verify_each())
ma, mv = statistics.median(a), statistics.median(v)
print(f"vouch audit ({len(wheels)} x 1 MB):   median {ma*1000:7.0f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in a))
print(f"vouch verify x {len(wheels)}:          median {mv*1000:7.0f} ms  runs " + " ".join(f"{x*1000:.0f}" for x in v))
if smoke:
    print("smoke run: debug build, one run, ratio not judged")
else:
    print(f"ratio (verify x N / audit): {mv/ma:.1f}x  (target >= 3x)")
PY
