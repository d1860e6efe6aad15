#!/usr/bin/env bash
# Benchmark: how fast vouch rebuilds CuPy after the changes a real pull request makes, with the
# scoped cache, side by side with plain ccache and no vouch. On the real CuPy sdist and the
# cuda13x cell of this machine's Python:
#   1. cold: empty store, a trusted build (push to main) that fills it;
#   2. warm: the same sources from a new directory, as pull request 100 (reads main's signed
#      entries, writes nothing);
#   3. one .pyx changed (a real function body), as pull request 101;
#   4. one widely cimported .pxd changed (a new inline function in cupy/_core/core.pxd), as
#      pull request 102;
#   4b. (issue 31) pull request 101's second /test, from a new directory: `pyx-again` under
#      today's rule (a PR build reads only what trusted builds signed, so it recompiles what
#      its first /test compiled), `pyx-again-pr-scope` under the old rule (a second /test read
#      its first /test's entries: modelled by a store whose main scope also holds them, the
#      same reads the old pr/101 layer gave). Their ratio is what the rule costs;
#   5. (FULL_ARCH=1) cold and warm with the profile's full CUPY_NVCC_GENERATE_CODE, run once;
#   6. plain ccache without vouch: CuPy's own build in a venv from the cell's lock, CC/CXX/NVCC
#      behind ccache on a local directory, cold then warm, the anchor.
# Then an uncached vouch build (no compiler cache, no Cython cache) of the base sources and,
# with UNCACHED_PR=1, of both changed sources. It prints each time and its ratio to the cold
# build, the hit rates per layer (Cython, compiler; the configure probes are the compiler
# misses a warm build has left), whether each cached wheel is byte-identical to the uncached
# build of the same sources, and whether the pull requests' builds left main's scope alone.
#
# Heavy (a CUDA 13 toolkit of ~1.2 GB, ~10 min per cold build on 2 cores): not part of the test
# suite. SMOKE=1 runs the same steps on the small Cython project in tests/fixtures/cyproj (no
# toolkit, no profile; seconds), so that scripts/bench.sh --smoke keeps this script working.
# The trusted and the pull-request builds install their toolkits separately, minutes apart, as
# two runners do (issue 32: the compiler cache must not key nvcc by its install time); the
# report shows both nvcc mtimes, lists every compile a warm build missed (ccache's log), and
# fails when the warm build missed any.
# Env: CUPY_VERSION (14.2.0), GENCODE (arch=compute_75,code=sm_75), JOBS (2), E2E_DIR
#      (target/cupy-rebuild), VOUCH_BIN, PROFILE (pyproject-templates/cupy/vouch.toml),
#      SEED_TOOLKIT (as in scripts/cupy-e2e.sh: copies one install into both trust levels,
#      which hides install-time differences; for quick reruns only), FULL_ARCH,
#      UNCACHED_PR, PLAIN (1; 0 skips the plain-ccache anchor), PLAIN_ONLY (1: only the
#      anchor and the report, over the records an earlier run left in E2E_DIR), QUICK (1: only
#      the cold trusted build and the warm pull-request build, each with its own toolkit
#      install: the compiler-identity check of issue 32 in two builds).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SMOKE=${SMOKE:-0}
JOBS=${JOBS:-2}
work=${E2E_DIR:-$root/target/cupy-rebuild}
[ "$SMOKE" = 1 ] && work=${E2E_DIR:-$root/target/cupy-rebuild-smoke}
export PATH=$root/target/test-tools/path:$PATH
command -v ccache >/dev/null || { echo "needs ccache on PATH (run scripts/test.sh once)" >&2; exit 1; }

if [ -n "${VOUCH_BIN:-}" ]; then
  vouch=$VOUCH_BIN
elif [ "$SMOKE" = 1 ]; then
  cargo build --locked -q
  vouch=$root/target/debug/vouch
else
  cargo build --release --locked -q
  vouch=$root/target/release/vouch
fi
if [ "${PLAIN_ONLY:-0}" != 1 ]; then
  rm -rf "$work"
fi
mkdir -p "$work"
export VOUCH_CACHE_DIR=${VOUCH_CACHE_DIR:-$root/target/cupy-rebuild-cache}
sha=0000000000000000000000000000000000000000

# The project, its sources as a directory, and the two edits a pull request makes.
if [ "$SMOKE" = 1 ]; then
  cp -r tests/fixtures/cyproj "$work/base"
  epoch=1700000000
  pyx_file=cyproj/other.pyx
  pyx_old="    return f'hello {name}'"
  pyx_new="    greeting = f'hello {name}'
    return greeting"
  pxd_file=cyproj/deep.pxd
  project=(--cache-dir "$VOUCH_CACHE_DIR")
else
  VERSION=${CUPY_VERSION:-14.2.0}
  GENCODE=${GENCODE:-arch=compute_75,code=sm_75}
  profile=${PROFILE:-$root/pyproject-templates/cupy/vouch.toml}
  sdist=$root/target/bench-cupy/cupy-$VERSION.tar.gz
  [ -f "$sdist" ] || { echo "needs $sdist: run scripts/cupy-e2e.sh once (it downloads and checks it)" >&2; exit 1; }
  py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  cell=cuda13x-py$py-linux-64
  if [ -n "${SEED_TOOLKIT:-}" ]; then
    for level in trusted untrusted; do
      mkdir -p "$VOUCH_CACHE_DIR/$level/toolchains"
      [ -e "$VOUCH_CACHE_DIR/$level/toolchains/$(basename "$SEED_TOOLKIT")" ] ||
        cp -a "$SEED_TOOLKIT" "$VOUCH_CACHE_DIR/$level/toolchains/"
    done
  fi
  if [ ! -d "$work/base" ]; then
    mkdir -p "$work/unpack"
    tar -xzf "$sdist" -C "$work/unpack"
    mv "$work/unpack/cupy-$VERSION" "$work/base"
  fi
  # The sdist's epoch: its newest member, as a build of the sdist itself would take it.
  epoch=$(python3 -c 'import sys, tarfile; print(int(max(m.mtime for m in tarfile.open(sys.argv[1]))))' "$sdist")
  pyx_file=cupy/cuda/device.pyx
  pyx_old="    return runtime.getDevice()"
  pyx_new="    cdef int device_id = runtime.getDevice()
    return device_id"
  pxd_file=cupy/_core/core.pxd
  project=(--profile "$profile" --cell "$cell" --set "CUPY_NUM_BUILD_JOBS=$JOBS" --sha "$sha")
fi
pxd_add="

cdef inline Py_ssize_t _vouch_bench_twice(Py_ssize_t n) noexcept:
    return 2 * n
"
variant() { # NAME FILE: a copy of base with FILE edited, its mtime kept (the epoch stays)
  cp -a "$work/base" "$work/$1"
  python3 - "$work/$1/$2" "$3" "$4" "$5" <<'PY'
import os, sys
path, mode, old, new = sys.argv[1:]
st = os.stat(path)
text = open(path, encoding='utf-8').read()
if mode == 'replace':
    if old not in text:
        sys.exit(f'{path}: the text to change is not there: {old!r}')
    text = text.replace(old, new, 1)
else:
    text += new
open(path, 'w', encoding='utf-8').write(text)
os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
}
# PLAIN_ONLY=1: only the plain-ccache anchor and the report, over an earlier run's records.
if [ "${PLAIN_ONLY:-0}" != 1 ]; then
variant pyx "$pyx_file" replace "$pyx_old" "$pyx_new"
variant pxd "$pxd_file" append "" "$pxd_add"
cp -a "$work/base" "$work/again"

gencode() { [ "$SMOKE" = 1 ] || echo "--set CUPY_NVCC_GENERATE_CODE=$1"; }
build() { # LABEL SOURCE-DIR [vouch build flags]: its JSON record in LABEL.json
  local label=$1 src=$2
  shift 2
  echo "== $label"
  # ccache's own log of every compile (which unit, hit or miss), for the report (a cell's
  # variable: the smoke project builds without a profile).
  rm -f "$work/$label.ccache.log"
  local log=()
  [ "$SMOKE" = 1 ] || log=(--set "CCACHE_LOGFILE=$work/$label.ccache.log")
  # shellcheck disable=SC2068
  "$vouch" build ${project[@]+"${project[@]}"} ${log[@]+"${log[@]}"} --source "$src" \
    --out "$work/out-$label" --source-date-epoch "$epoch" --json "$@" > "$work/$label.json"
}
# Trusted builds sign every entry with a key derived from the seal key; pull-request builds
# check with its public half (issue 31).
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/seal-key"
pubkey=$("$vouch" cache public-key --seal-key-file "$work/seal-key")
trusted=(--cache ccache --cache-store "$work/store" --event push --ref refs/heads/main --seal-key-file "$work/seal-key")
pr() { echo "--cache ccache --cache-store ${2:-$work/store} --event pull_request --pr $1 --base-ref main --cache-public-key $pubkey"; }

# shellcheck disable=SC2046
{
  build cold "$work/base" "${trusted[@]}" $(gencode "${GENCODE:-}")
  find "$work/store/branch" -type f | sort > "$work/main-keys-after-cold"
  build warm "$work/again" $(pr 100) $(gencode "${GENCODE:-}")
  if [ "${QUICK:-0}" != 1 ]; then
  build pyx "$work/pyx" $(pr 101) $(gencode "${GENCODE:-}")
  build pxd "$work/pxd" $(pr 102) $(gencode "${GENCODE:-}")
  find "$work/store/branch" -type f | sort > "$work/main-keys-after-prs"
  # The second /test of pull request 101 (a new directory: nothing local carries over).
  cp -a "$work/pyx" "$work/pyx-2" && cp -a "$work/pyx" "$work/pyx-3" && cp -a "$work/pyx" "$work/pyx-seed"
  build pyx-again "$work/pyx-2" $(pr 101) $(gencode "${GENCODE:-}")
  cp -a "$work/store" "$work/store-pr-scope"
  build pyx-seed "$work/pyx-seed" --cache ccache --cache-store "$work/store-pr-scope" --event push \
    --ref refs/heads/main --seal-key-file "$work/seal-key" $(gencode "${GENCODE:-}")
  build pyx-again-pr-scope "$work/pyx-3" $(pr 101 "$work/store-pr-scope") $(gencode "${GENCODE:-}")
  build uncached "$work/base" $(gencode "${GENCODE:-}")
  if [ "${UNCACHED_PR:-0}" = 1 ]; then
    build uncached-pyx "$work/pyx" $(gencode "${GENCODE:-}")
    build uncached-pxd "$work/pxd" $(gencode "${GENCODE:-}")
  fi
  if [ "$SMOKE" != 1 ] && [ "${FULL_ARCH:-0}" = 1 ]; then
    # The profile's own CUPY_NVCC_GENERATE_CODE (every architecture CuPy ships), a store of
    # its own so the sm_75 objects above do not count.
    build cold-all-arch "$work/base" --cache ccache --cache-store "$work/store-all" --event push --ref refs/heads/main --seal-key-file "$work/seal-key"
    build warm-all-arch "$work/again" $(pr 200 "$work/store-all")
  fi
  else
    find "$work/store/branch" -type f | sort > "$work/main-keys-after-prs"
  fi
}

fi

# The anchor: the project's own build, by hand, with ccache in front of the compilers.
if [ "${PLAIN:-1}" = 1 ] && [ "${QUICK:-0}" != 1 ]; then
  venv=$work/plain-venv
  python3 -m venv "$venv"
  if [ "$SMOKE" = 1 ]; then
    "$venv/bin/pip" install -q -U build wheel "setuptools>=70" Cython==3.2.9
  else
    "$venv/bin/pip" install -q --require-hashes --no-deps --only-binary :all: \
      -r "$root/pyproject-templates/cupy/locks/build-py$py-linux-64.txt"
  fi
  plain() { # LABEL: CuPy's build in $work/plain-src with the cold build's variables
    echo "== $1 (ccache, no vouch)"
    rm -rf "$work/plain-src" && cp -a "$work/base" "$work/plain-src"
    python3 - "$work/cold.json" "$work/plain-env" <<'PY'
import json, shlex, sys
r = json.load(open(sys.argv[1]))
env = dict(r.get('env') or {})
out = open(sys.argv[2], 'w')
# The profile's template files (wheel metadata, long description) are vouch's additions to
# the source, which a build by hand does not have.
for k in ('CUPY_INSTALL_WHEEL_METADATA', 'CUPY_INSTALL_LONG_DESCRIPTION'):
    env.pop(k, None)
# vouch's build saw the toolkit through a link in its work directory; by hand, it is where
# it was installed.
seen, real = env.get('CUDA_PATH'), ((r.get('toolchain') or {}).get('cuda_path'))
if seen and real:
    env = {k: v.replace(seen, real) for k, v in env.items()}
for k, v in env.items():
    if k == 'NVCC':  # vouch's launcher and prefix maps: plain ccache in front of nvcc instead
        v = 'ccache ' + v.split()[1] if v.split()[0].endswith('ccache') else 'ccache ' + v.split()[0]
    out.write(f'export {k}={shlex.quote(v)}\n')
PY
    (
      cd "$work/plain-src"
      # shellcheck disable=SC1091
      . "$work/plain-env"
      [ -n "${CUDA_PATH:-}" ] && export PATH=$CUDA_PATH/bin:$PATH
      [ "$SMOKE" = 1 ] || export CUPY_NVCC_GENERATE_CODE=$GENCODE
      export CCACHE_DIR=$work/plain-ccache CCACHE_BASEDIR=$work/plain-src CC="ccache gcc" CXX="ccache g++"
      export SOURCE_DATE_EPOCH=$epoch
      ccache -z >/dev/null
      start=$(date +%s.%N)
      "$venv/bin/python" -m build --wheel --no-isolation --outdir "$work/out-$1" . >"$work/$1.log" 2>&1
      end=$(date +%s.%N)
      python3 - "$start" "$end" "$work/$1.json" <<'PY'
import json, subprocess, sys
stats = dict(l.split('\t', 1) for l in subprocess.run(['ccache', '--print-stats'], capture_output=True, text=True).stdout.splitlines() if '\t' in l)
hits = int(stats.get('direct_cache_hit', 0)) + int(stats.get('preprocessed_cache_hit', 0))
json.dump({'plain': True, 'seconds': float(sys.argv[2]) - float(sys.argv[1]), 'hits': hits, 'misses': int(stats.get('cache_miss', 0))}, open(sys.argv[3], 'w'))
PY
    )
  }
  plain plain-cold
  plain plain-warm
fi

python3 - "$work" "$SMOKE" <<'PY'
import json, os, sys
work, smoke = sys.argv[1], sys.argv[2] == '1'

def load(label):
    path = os.path.join(work, f'{label}.json')
    if not os.path.exists(path):
        return None
    r = json.load(open(path))
    if r.get('plain'):
        return {'seconds': r['seconds'], 'compiler': (r['hits'], r['misses']), 'cython': None, 'repair': None, 'sha256': None, 'phases': None}
    if not isinstance(r['seconds'], dict):  # a plain `vouch build` report
        cache, seconds, sha = r.get('cache') or {}, r['seconds'], r['sha256']
        phases = r.get('phases')
    else:  # a cell record
        cache, seconds, sha = r.get('cache') or {}, r['seconds']['build'], r['sha256']
        phases = r['seconds'].get('phases')
    cc = cache.get('compiler_cache') or {}
    cy = cache.get('cython')
    return {'seconds': seconds, 'compiler': (cc.get('hits'), cc.get('misses')) if cc else None,
            'cython': cy, 'repair': cache.get('repair'), 'sha256': sha, 'phases': phases}

def rate(h, m):
    return f'{100 * h / (h + m):.1f}%' if h is not None and m is not None and h + m else '-'

rows = ['cold', 'warm', 'pyx', 'pxd', 'pyx-again', 'pyx-again-pr-scope', 'cold-all-arch', 'warm-all-arch', 'uncached',
        'uncached-pyx', 'uncached-pxd', 'plain-cold', 'plain-warm']
runs = {l: load(l) for l in rows}
cold = runs['cold']['seconds']
print()
print(f"{'build':<16}{'seconds':>9}{'x cold':>8}  {'Cython hits/misses':<22}{'compiler hits/misses':<24}{'repair':<8}sha256")
for label in rows:
    r = runs[label]
    if r is None:
        continue
    base = runs['cold-all-arch']['seconds'] if label == 'warm-all-arch' else (
        runs['plain-cold']['seconds'] if label == 'plain-warm' else cold)
    cy = r['cython']
    cys = f"{cy['hits']}/{cy['misses']} ({rate(cy['hits'], cy['misses'])})" if cy else '-'
    cc = r['compiler']
    ccs = f"{cc[0]}/{cc[1]} ({rate(*cc)})" if cc else '-'
    rp = r['repair']
    rps = f"{rp['hits']}/{rp['misses']}" if rp else '-'
    print(f"{label:<16}{r['seconds']:>9.1f}{r['seconds'] / base:>8.3f}  {cys:<22}{ccs:<24}{rps:<8}{(r['sha256'] or '-')[:23]}")
print('(warm-all-arch is relative to cold-all-arch, plain-warm to plain-cold; repair: hits/misses of the auditwheel repair cache)')
print()
print('where the seconds went (prepare: venv and source copies; backend: configure, Cython, compile, link):')
for label in rows:
    r = runs[label]
    if r and r.get('phases'):
        print(f"  {label:<14}" + '  '.join(f"{k} {v:.1f}" for k, v in r['phases'].items()))
print()
targets = [('warm', 0.05), ('pyx', 0.15), ('pxd', 0.5)]
for label, t in ([] if smoke else targets):  # smoke: a few seconds of work judge nothing
    r = runs[label]
    if r is None:
        continue
    print(f"{label}: {r['seconds'] / cold:.3f} x cold (target <= {t}): {'met' if r['seconds'] / cold <= t else 'MISSED'}")
a, b = runs.get('pyx-again'), runs.get('pyx-again-pr-scope')
if a and b:
    print(f"a PR's second /test (one .pyx): {a['seconds']:.1f} s reading only signed trusted entries, "
          f"{b['seconds']:.1f} s when it could read its first /test's: cost of the rule {a['seconds'] / b['seconds']:.2f}x "
          f"(compiler hits {rate(*a['compiler']) if a['compiler'] else '-'} vs {rate(*b['compiler']) if b['compiler'] else '-'})")
if runs['plain-warm'] and runs['plain-cold']:
    print(f"plain ccache warm: {runs['plain-warm']['seconds'] / runs['plain-cold']['seconds']:.3f} x its cold; "
          f"vouch warm / plain warm: {runs['warm']['seconds'] / runs['plain-warm']['seconds']:.3f}")
w = runs['warm']
if w['compiler']:
    print(f"warm compiler-cache hits: {rate(*w['compiler'])} (target: every compile); misses left: {w['compiler'][1]}")

def missed_units(label):
    """The source files ccache's log shows as misses: (pid -> source, result) per compile."""
    path = os.path.join(work, f'{label}.ccache.log')
    if not os.path.exists(path):
        return None
    src, out = {}, []
    for line in open(path, errors='replace'):
        parts = line.split('] ', 1)
        if len(parts) != 2:
            continue
        pid = parts[0].rsplit(' ', 1)[-1]
        text = parts[1].strip()
        if text.startswith('Source file: '):
            src[pid] = text[len('Source file: '):]
        elif text == 'Result: cache_miss':
            out.append(src.get(pid, '?'))
    return sorted(set(out))

def nvcc_of(label):
    tc = (json.load(open(os.path.join(work, f'{label}.json'))).get('toolchain') or {}) if os.path.exists(os.path.join(work, f'{label}.json')) else {}
    p = os.path.join(tc.get('cuda_path') or '', 'bin', 'nvcc')
    return (tc.get('dir'), os.stat(p).st_mtime) if tc and os.path.exists(p) else (None, None)

if not smoke:
    (tdir, tm), (pdir, pm) = nvcc_of('cold'), nvcc_of('warm')
    if tm and pm:
        import datetime
        fmt = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime('%H:%M:%S')
        print(f"toolkits: trusted {tdir} (nvcc mtime {fmt(tm)}), pull request {pdir} (nvcc mtime {fmt(pm)}): "
              f"{'installed separately, ' + str(round(abs(pm - tm))) + ' s apart' if tdir != pdir and tm != pm else 'NOT installed separately'}")
for label in ('warm', 'pyx', 'pxd'):
    units = missed_units(label)
    if units is not None:
        print(f"{label}: compiles that missed ({len(units)}): {', '.join(units) if units else 'none'}")
warm_missed = missed_units('warm')
warm_ok = smoke or (w['compiler'] is not None and w['compiler'][1] == 0 and not warm_missed)
print(f"warm target (every compile hits): {'met' if warm_ok else 'MISSED'}")
print()
def same(a, b):
    ra, rb = runs[a], runs[b]
    if ra is None or rb is None:
        return f'{a} vs {b}: not checked ({b} not built)'
    return f"{a} vs {b}: {'identical' if ra['sha256'] == rb['sha256'] else 'DIFFERENT'}"
for a, b in [('warm', 'cold'), ('cold', 'uncached'), ('warm', 'uncached'), ('pyx', 'uncached-pyx'), ('pxd', 'uncached-pxd'),
             ('pyx-again', 'pyx'), ('pyx-again-pr-scope', 'pyx')]:
    print(same(a, b))
before = open(os.path.join(work, 'main-keys-after-cold')).read()
after = open(os.path.join(work, 'main-keys-after-prs')).read()
print(f"main's scope after the pull requests' builds: {'unchanged' if before == after else 'CHANGED'} "
      f"({len(before.splitlines())} entries)")
prs = sorted(os.listdir(os.path.join(work, 'store', 'pr'))) if os.path.isdir(os.path.join(work, 'store', 'pr')) else []
print(f"pull-request scopes written: {', '.join('pr/' + p for p in prs) or 'none'}")
bad = [l for l, r in runs.items() if r and not l.startswith('plain') and r['sha256'] is None]
base = runs['uncached'] or runs['cold']  # QUICK: no uncached build, cold is the reference
ok = before == after and runs['warm']['sha256'] == base['sha256'] == runs['cold']['sha256']
for a, b in [('pyx', 'uncached-pyx'), ('pxd', 'uncached-pxd'), ('pyx-again', 'pyx'), ('pyx-again-pr-scope', 'pyx')]:
    if runs[a] is not None and runs[b] is not None:
        ok = ok and runs[a]['sha256'] == runs[b]['sha256']
ok = ok and warm_ok
if smoke:
    print('smoke: done' if ok else 'smoke: a check failed')
sys.exit(0 if ok else 1)
PY
