#!/usr/bin/env bash
# End to end on CuPy as CuPy builds it (issue 32): from a git checkout of a CuPy release tag with
# its submodules, through the generated jobs' own commands (`vouch sdist` in the checkout, then
# `vouch build --cell` from that sdist), with the CUDA version CuPy's ci/versions.yml names for
# that release, cuTENSOR and NCCL compiled in, and CuPy's own architecture list.
#
#   1. Two checkouts of cupy/cupy at TAG in two directories, submodules recursive (as
#      actions/checkout with `submodules: recursive` does); the submodules come from local
#      mirrors (MIRRORS: a directory of bare repositories; git's url.<mirror>.insteadOf maps
#      the .gitmodules URLs to them). Nothing of CuPy's is committed to vouch.
#   2. The profile is pyproject-templates/cupy/vouch.toml, which follows CuPy's main. The tag's
#      ci/versions.yml names another CUDA: `vouch sdist` must refuse it; then the one-line data
#      change (`cuda = "<the tag's version>"` in a copy of the profile) is made and it packs.
#   3. `vouch sdist` in each checkout: the two sdists must be byte-identical, and must carry the
#      submodules' headers (cupy/_core/include/cupy/_cccl, ...), as CuPy's sdist on PyPI does.
#   4. `vouch build --cell cuda13x-py<this python>-linux-64` from sdist A (cold, through ccache on
#      a directory store), and from sdist B (another directory; warm): one digest.
#   5. The wheel: `twine check --strict`; it contains CuPy's cutensor and nccl modules;
#      `cuobjdump --list-elf --list-ptx` of every module against the list CuPy's own
#      install/cupy_builder/_compiler.py gives for that CUDA version on this platform; it
#      installs and imports (no GPU here).
#   6. Member by member against CuPy's own released wheel of the same version, flavor and Python
#      (PyPI, sha256-checked): module list, architectures per module, `_wheel.json`.
#
# Heavy (~1.5 GB of toolkit wheels; a cold build compiles CuPy's CUDA sources for every
# architecture): not part of .ci/run.
# Env: TAG (v14.2.0), MIRRORS (/work/.mirror: <owner>+<name>/repo), JOBS (2), E2E_DIR
#      (target/cupy-e2e-checkout), VOUCH_BIN (else the release build), CHECK_ONLY (1: steps 5
#      and 6 only, on the sdists and wheels an earlier run left in E2E_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
TAG=${TAG:-v14.2.0}
version=${TAG#v}
MIRRORS=${MIRRORS:-/work/.mirror}
JOBS=${JOBS:-2}
work=${E2E_DIR:-$root/target/cupy-e2e-checkout}
export PATH=$root/target/test-tools/path:$PATH
if [ -n "${VOUCH_BIN:-}" ]; then
  vouch=$VOUCH_BIN
else
  cargo build --release --locked -q
  vouch=$root/target/release/vouch
fi
py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
pytag=cp${py/./}
cell=cuda13x-py$py-linux-64
mkdir -p "$work"
export VOUCH_CACHE_DIR=${VOUCH_CACHE_DIR:-$work/cache}
ok=1
fail() { echo "FAILED: $*"; ok=0; }

# 1. Checkouts, as actions/checkout with `submodules: recursive` makes them.
mirror_args=()
for url in https://github.com/cupy/cupy.git https://github.com/NVIDIA/cccl.git \
  https://github.com/NVIDIA/jitify.git https://github.com/dmlc/dlpack.git https://github.com/scipy/xsf.git; do
  path=${url#https://github.com/}
  path=${path%.git}
  mirror_args+=(-c "url.$MIRRORS/${path/\//+}/repo.insteadOf=$url")
done
checkout() { # DIR
  [ -d "$1/.git" ] && return 0
  git "${mirror_args[@]}" -c advice.detachedHead=false clone -q --no-checkout https://github.com/cupy/cupy.git "$1"
  git -C "$1" "${mirror_args[@]}" checkout -q "$TAG"
  git -C "$1" "${mirror_args[@]}" -c protocol.file.allow=always submodule -q update --init --recursive
}
echo "== checkouts of cupy $TAG with submodules"
checkout "$work/a/cupy"
checkout "$work/b/cupy"
git -C "$work/a/cupy" submodule status --recursive
commit=$(git -C "$work/a/cupy" rev-parse HEAD)

# 2. The profile follows CuPy's main; the tag names its own CUDA.
profile_dir=$work/profile
rm -rf "$profile_dir" && cp -r pyproject-templates/cupy "$profile_dir"
tag_cuda=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["cuda"]["build"]["version"])' \
  "$work/a/cupy/ci/versions.yml" 2>/dev/null || sed -n '/^  build:/,/version/{s/.*version: *"\{0,1\}\([0-9.]*\)"\{0,1\}/\1/p}' "$work/a/cupy/ci/versions.yml" | head -n1)
echo "== $TAG's ci/versions.yml builds cuda13x with CUDA $tag_cuda"
set +e
"$vouch" sdist --profile "$profile_dir/vouch.toml" --source "$work/a/cupy" --out "$work/refused" 2> "$work/refused.err"
code=$?
set -e
if [ "$code" = 0 ]; then
  grep -q "cuda = \"$tag_cuda\"" "$profile_dir/vouch.toml" || fail "vouch sdist packed a checkout whose CUDA version the profile does not build"
else
  echo "refused as expected (exit $code): $(head -c 400 "$work/refused.err")"
  [ ! -e "$work/refused" ] || [ -z "$(ls -A "$work/refused")" ] || fail "the refused sdist left output"
fi
sed -i "/^\[flavors.cuda13x\]/,/^\[/ s/^cuda = \".*\"/cuda = \"$tag_cuda\"/" "$profile_dir/vouch.toml"
grep -A3 '^\[flavors.cuda13x\]' "$profile_dir/vouch.toml" | grep '^cuda = '
profile=$profile_dir/vouch.toml

if [ "${CHECK_ONLY:-0}" != 1 ]; then
# 3. The sdist, as the generated sdist job makes it, from each checkout.
for side in a b; do
  echo "== vouch sdist ($side)"
  rm -rf "$work/sdist-$side"
  (cd "$work/$side/cupy" && "$vouch" sdist --profile "$profile" --source . --out "$work/sdist-$side")
done
sdist_a=$(ls "$work"/sdist-a/*.tar.gz)
sdist_b=$(ls "$work"/sdist-b/*.tar.gz)
sha_a=$(sha256sum "$sdist_a" | cut -d' ' -f1)
sha_b=$(sha256sum "$sdist_b" | cut -d' ' -f1)
echo "sdist a: $sha_a"
echo "sdist b: $sha_b"
[ "$sha_a" = "$sha_b" ] || fail "the sdists of two checkouts differ"
for hdr in cupy/_core/include/cupy/_cccl/ cupy/_core/include/cupy/_jitify/ cupy/_core/include/cupy/_dlpack/ cupy/_core/include/cupy/xsf/; do
  n=$(tar tzf "$sdist_a" | grep -c "^cupy-$version/$hdr" || true)
  echo "sdist members under $hdr: $n"
  [ "$n" -gt 0 ] || fail "the sdist has nothing under $hdr (submodules missing?)"
done

# CuPy's own sdist of the release (PyPI, sha256-checked): the same member list.
pypi_sdist=$root/target/bench-cupy/cupy-$version.tar.gz
if [ ! -f "$pypi_sdist" ]; then
  mkdir -p "$(dirname "$pypi_sdist")"
  link=$(curl -sf https://pypi.org/simple/cupy/ | grep -o "href=\"[^\"]*cupy-$version.tar.gz#sha256=[0-9a-f]*\"" | head -n1 | sed 's/^href="//; s/"$//')
  curl -sf -o "$pypi_sdist.part" "${link%%#*}"
  echo "${link##*sha256=}  $pypi_sdist.part" | sha256sum -c --quiet
  mv "$pypi_sdist.part" "$pypi_sdist"
fi
members() { tar tzf "$1" | sed "s#^cupy-$version/\{0,1\}##; s#/\$##" | grep -v '^$' | sort -u; }
if diff <(members "$pypi_sdist") <(members "$sdist_a") > "$work/sdist-members.diff"; then
  echo "sdist members: the same $(members "$sdist_a" | wc -l) as CuPy's cupy-$version.tar.gz on PyPI"
else
  fail "the sdist's members differ from CuPy's on PyPI ($work/sdist-members.diff)"
fi

# 4. The cell from each sdist (the generated build job's command), trusted scope. The seal key
# signs the store's entries: a new one would make every earlier entry unauthenticated.
[ -s "$work/seal-key" ] || head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/seal-key"
build() { # LABEL SDIST
  echo "== vouch build $cell ($1)"
  rm -rf "$work/out-$1"
  "$vouch" build --profile "$profile" --cell "$cell" --source "$2" --out "$work/out-$1" \
    --set "CUPY_NUM_BUILD_JOBS=$JOBS" --sha "$commit" \
    --cache ccache --cache-store "$work/store" --event push --ref "refs/tags/$TAG" \
    --seal-key-file "$work/seal-key" --json > "$work/$1.json"
}
build a "$sdist_a"
build b "$sdist_b"
wheel=$(ls "$work"/out-a/*.whl)
wheel_b=$(ls "$work"/out-b/*.whl)
python3 - "$work/a.json" "$work/b.json" <<'PY'
import json, sys
for p in sys.argv[1:]:
    r = json.load(open(p))
    c = (r.get('cache') or {}).get('compiler_cache') or {}
    print(f"{p.rsplit('/', 1)[1]}: build {r['seconds']['build']:.1f} s, compiler cache {c.get('hits')}/{c.get('misses')} hits/misses, "
          f"toolkit {r['toolchain']['nvcc']}, {r['wheel']} {r['sha256']}")
PY
[ "$(sha256sum "$wheel" | cut -d' ' -f1)" = "$(sha256sum "$wheel_b" | cut -d' ' -f1)" ] || fail "the wheels of the two checkouts differ"
else
  sdist_a=$(ls "$work"/sdist-a/*.tar.gz)
  wheel=$(ls "$work"/out-a/*.whl 2>/dev/null || ls "$work"/out-b/*.whl)
  echo "== checking $(basename "$wheel") sha256:$(sha256sum "$wheel" | cut -d' ' -f1) (from an earlier run)"
fi

# 5. The wheel itself.
tools=$work/tools
if [ ! -x "$tools/bin/twine" ]; then
  python3 -m venv "$tools"
  # twine; numpy and setuptools for importing CuPy's own _compiler.py below.
  "$tools/bin/pip" install -q twine numpy setuptools
fi
# As the generated jobs: --strict on the wheel (CuPy's build-wheel.yml checks its wheelhouse
# so); the sdist without it (CuPy's own sdist has no long description).
echo "== twine check --strict (wheel), twine check (sdist)"
"$tools/bin/twine" check --strict "$wheel" || fail "twine check --strict (wheel)"
"$tools/bin/twine" check "$sdist_a" || fail "twine check (sdist)"
cuobjdump_dir=$work/cuobjdump
if [ ! -x "$cuobjdump_dir/bin/cuobjdump" ]; then
  # The toolkit's own cuobjdump for the CUDA version built (a checking tool, not a build input).
  objver=$(grep '^nvidia-cuda-nvcc==' "$profile_dir/toolchains/cuda-$tag_cuda-linux-64.txt" | sed 's/.*==\([0-9.]*\) .*/\1/')
  mkdir -p "$work/dl-cuobjdump"
  python3 -m pip download -q --no-deps --only-binary :all: -d "$work/dl-cuobjdump" "nvidia-cuda-cuobjdump==$objver" \
    || python3 -m pip download -q --no-deps --only-binary :all: -d "$work/dl-cuobjdump" "nvidia-cuda-cuobjdump~=${tag_cuda%.*}.0"
  mkdir -p "$cuobjdump_dir/bin"
  python3 - "$work/dl-cuobjdump" "$cuobjdump_dir/bin/cuobjdump" <<'PY'
import glob, os, sys, zipfile
z = zipfile.ZipFile(glob.glob(os.path.join(sys.argv[1], '*.whl'))[0])
name = next(n for n in z.namelist() if n.endswith('/bin/cuobjdump'))
open(sys.argv[2], 'wb').write(z.read(name))
os.chmod(sys.argv[2], 0o755)
PY
fi
echo "== $(basename "$wheel")"
echo "== CuPy's released wheel of $version for $pytag"
ref_dir=$work/pypi
mkdir -p "$ref_dir"
if ! ls "$ref_dir"/cupy_cuda13x-"$version"-"$pytag"-*.whl >/dev/null 2>&1; then
  link=$(curl -sf https://pypi.org/simple/cupy-cuda13x/ | grep -o "href=\"[^\"]*cupy_cuda13x-$version-$pytag-$pytag-manylinux[^\"]*x86_64.whl#sha256=[0-9a-f]*\"" | head -n1 | sed 's/^href="//; s/"$//')
  [ -n "$link" ] || { echo "no cupy-cuda13x $version wheel for $pytag on PyPI" >&2; exit 1; }
  name=$(basename "${link%%#*}")
  curl -sf -o "$ref_dir/$name.part" "${link%%#*}"
  echo "${link##*sha256=}  $ref_dir/$name.part" | sha256sum -c --quiet
  mv "$ref_dir/$name.part" "$ref_dir/$name"
fi
ref=$(ls "$ref_dir"/cupy_cuda13x-"$version"-"$pytag"-*.whl)
echo "reference: $(basename "$ref") sha256:$(sha256sum "$ref" | cut -d' ' -f1)"

"$tools/bin/python" - "$wheel" "$ref" "$cuobjdump_dir/bin/cuobjdump" "$work/a/cupy" "$tag_cuda" "$work/compare" <<'PY' || ok=0
import importlib.util, json, os, re, subprocess, sys, zipfile
ours_path, ref_path, cuobjdump, checkout, cuda, scratch = sys.argv[1:]
os.makedirs(scratch, exist_ok=True)
ours, ref = zipfile.ZipFile(ours_path), zipfile.ZipFile(ref_path)
failed = []

def modules(z):
    return {n for n in z.namelist() if n.endswith('.so') or '.so.' in n.rsplit('/', 1)[-1]}

def stem(n):  # cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so -> cupy/cuda/thrust
    return re.sub(r'\.cpython-[^/]*\.so$', '', n)

om, rm = {stem(n): n for n in modules(ours)}, {stem(n): n for n in modules(ref)}
vendored = {k for k in rm if k.startswith('cupy_cuda13x.libs/') or '.libs/' in k}
print(f"modules: ours {len(om)}, CuPy's {len(rm)} ({len(vendored)} vendored libraries in CuPy's)")
for label, names in (('only in ours', sorted(set(om) - set(rm))), ('only in CuPy\'s', sorted(set(rm) - set(om) - vendored))):
    print(f"  {label}: {names if names else 'none'}")
    if names:
        failed.append(f'module lists differ ({label})')
for need in ('cupy_backends/cuda/libs/cutensor', 'cupy_backends/cuda/libs/nccl'):
    present = need in om
    print(f"  {need}: {'present' if present else 'MISSING'}")
    if not present:
        failed.append(f'{need} missing')

# CuPy's own choice for this CUDA version and platform: its _compiler.py, unset variable.
sys.path.insert(0, os.path.join(checkout, 'install'))
os.environ.pop('CUPY_NVCC_GENERATE_CODE', None)
spec = importlib.util.spec_from_file_location('cupy_builder._compiler', os.path.join(checkout, 'install/cupy_builder/_compiler.py'))
try:
    import cupy_builder._compiler as compiler
except Exception:
    compiler = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compiler)
major, minor = (int(x) for x in cuda.split('.')[:2])
opts = compiler._nvcc_gencode_options(major * 1000 + minor * 10)
elf, ptx = set(), set()
for o in opts:
    m = re.match(r'--generate-code=arch=(compute_\w+),code=(\w+)', o)
    if m:
        (ptx if m.group(2).startswith('compute_') else elf).add(m.group(2))
print(f"CuPy's _compiler.py for CUDA {cuda} on this platform: cubins {sorted(elf)}, PTX {sorted(ptx)}")

def archs(z, name):
    path = os.path.join(scratch, os.path.basename(name))
    open(path, 'wb').write(z.read(name))
    out = subprocess.run([cuobjdump, '--list-elf', '--list-ptx', path], capture_output=True, text=True)
    e = set(re.findall(r'ELF file\s+\d+:.*\.(sm_\w+?)\.cubin', out.stdout))
    p = set(re.findall(r'PTX file\s+\d+:.*\.(sm_\w+?)\.ptx', out.stdout))
    os.remove(path)
    return e, {x.replace('sm_', 'compute_') for x in p}

with_device = 0
for s in sorted(set(om) & set(rm)):
    oe, op = archs(ours, om[s])
    re_, rp = archs(ref, rm[s])
    if not (oe or op or re_ or rp):
        continue
    with_device += 1
    same = (oe, op) == (re_, rp)
    as_cupy = oe == elf and op == ptx
    print(f"  {s}: ours cubins {sorted(oe)} PTX {sorted(op)}; CuPy's wheel {'same' if same else f'cubins {sorted(re_)} PTX {sorted(rp)}'}; "
          f"_compiler.py {'matches' if as_cupy else 'DIFFERS'}")
    if not as_cupy:
        failed.append(f'{s}: architectures differ from _compiler.py')
    if not same:
        failed.append(f'{s}: architectures differ from CuPy\'s wheel')
print(f"modules with device code: {with_device}")

def wheel_json(z):
    n = next((n for n in z.namelist() if n.endswith('/_wheel.json')), None)
    return json.loads(z.read(n)) if n else None
oj, rj = wheel_json(ours), wheel_json(ref)
print(f"_wheel.json: {'identical' if oj == rj else 'DIFFERS'}")
if oj != rj:
    print('  ours:  ', json.dumps(oj, sort_keys=True))
    print('  CuPy\'s:', json.dumps(rj, sort_keys=True))
    failed.append('_wheel.json differs')
print('wheel tags: ours', os.path.basename(ours_path), '| CuPy\'s', os.path.basename(ref_path))
if failed:
    print('FAILED:', '; '.join(failed))
    sys.exit(1)
PY

echo "== pip install + import (no GPU here)"
rm -rf "$work/venv" && python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"
"$work/venv/bin/python" - <<'PY' || fail "import cupy"
import cupy, importlib.util
print("import cupy: ok,", cupy.__version__)
for m in ("cupy_backends.cuda.libs.cutensor", "cupy_backends.cuda.libs.nccl"):
    print(m, "in the wheel:", importlib.util.find_spec(m) is not None)
PY
[ "$ok" = 1 ] && echo "e2e: all checks passed" || { echo "e2e: a check failed"; exit 1; }
