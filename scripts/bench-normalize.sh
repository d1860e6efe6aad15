#!/usr/bin/env bash
# Benchmark: `vouch normalize` vs `python -m wheel unpack` + `python -m wheel pack` on the same
# synthetic ~100 MB wheel (mixed compressible and incompressible members). Runs both side by
# side, alternating, RUNS times each, and prints medians and the ratio. Not a test.
# SMOKE=1 (scripts/bench-lib.sh): a tenth of the wheel (~10 MB), one run of each, no ratio judged.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=$(bench_runs 5)
scale=10
smoke && scale=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bench_build
vouch=$bin/vouch
venv=$PWD/target/bench-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q wheel==0.45.1
fi
py=$venv/bin/python

"$py" - "$work/in" "$scale" <<'PY'
import base64, hashlib, os, random, sys, zipfile
out, scale = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = random.Random(42)
members = {}
words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(2000)]
for i in range(3 * scale):   # incompressible, like compiled device code blobs: 30 x 1.7 MB at scale 10
    members[f"synth/lib/blob{i:02d}.bin"] = rng.randbytes(1_700_000)
for i in range(4 * scale):   # compressible, like source and text: 40 x 1.2 MB at scale 10
    members[f"synth/src/module{i:02d}.py"] = b" ".join(rng.choice(words) for _ in range(200_000))[:1_200_000]
for i in range(30 * scale):  # many small files
    members[f"synth/pkg/small{i:03d}.py"] = b"x = %d\n" % i * rng.randint(1, 50)
di = "synth-1.0.dist-info"
members[f"{di}/METADATA"] = b"Metadata-Version: 2.1\nName: synth\nVersion: 1.0\n"
members[f"{di}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
record = []
for name, data in members.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={h},{len(data)}")
record.append(f"{di}/RECORD,,")
members[f"{di}/RECORD"] = ("\n".join(record) + "\n").encode()
path = os.path.join(out, "synth-1.0-cp311-cp311-linux_x86_64.whl")
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in members.items():
        z.writestr(name, data)
total = sum(len(d) for d in members.values())
print(f"synthetic wheel: {len(members)} members, {total/1e6:.1f} MB uncompressed, {os.path.getsize(path)/1e6:.1f} MB on disk")
PY
wheel=$work/in/synth-1.0-cp311-cp311-linux_x86_64.whl

"$py" - "$vouch" "$py" "$wheel" "$work" "$RUNS" <<'PY'
import os, shutil, statistics, subprocess, sys, time
vouch, py, wheel, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

def run_vouch():
    out = os.path.join(work, "vouch-out")
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([vouch, "-q", "normalize", wheel, "--out", out], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t

def run_wheel():
    tmp, out = os.path.join(work, "unpacked"), os.path.join(work, "wheel-out")
    shutil.rmtree(tmp, ignore_errors=True); shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)  # wheel pack does not create it
    t = time.perf_counter()
    subprocess.run([py, "-m", "wheel", "unpack", wheel, "-d", tmp], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([py, "-m", "wheel", "pack", os.path.join(tmp, "synth-1.0"), "-d", out], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t

v, w = [], []
for i in range(runs):
    v.append(run_vouch()); w.append(run_wheel())
mv, mw = statistics.median(v), statistics.median(w)
print(f"vouch normalize:              median {mv:.3f} s  runs {' '.join(f'{x:.3f}' for x in v)}")
print(f"wheel unpack + wheel pack:    median {mw:.3f} s  runs {' '.join(f'{x:.3f}' for x in w)}")
out = os.path.join(work, "vouch-out", os.path.basename(wheel))
print(f"output sizes: vouch {os.path.getsize(out)/1e6:.1f} MB, wheel pack {os.path.getsize(os.path.join(work, 'wheel-out', os.path.basename(wheel)))/1e6:.1f} MB")
if os.environ["SMOKE"] == "1":
    print("smoke run: debug build, one run, ratio not judged")
else:
    print(f"ratio (wheel / vouch): {mw / mv:.2f}x  (target >= 2x, goal 3x)")
PY
