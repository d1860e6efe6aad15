"""vouch's build-environment shim.

vouch writes this module and a ``.pth`` file that imports it into each build's own copy of
the build venv (crates/vouch-build/src/buildenv.rs), so every interpreter of the build loads
it: the PEP 517 frontend, the backend, and their worker processes. It patches nothing in the
project being built. Its jobs are each switched on by a variable vouch sets for that build
only; without them, importing it does nothing.

``VOUCH_DETERMINISTIC_TEMP=1``
    ``tempfile`` draws its names from a fixed sequence instead of a random one. Configure
    probes that compile in ``tempfile.mkdtemp()`` (CuPy's ``install_build.build_and_run``)
    then compile the same path in every build, so the compiler cache can hit them: a random
    directory name is part of what ccache and sccache hash. Predictable names are safe only
    in a directory no one else can write, so vouch sets ``TMPDIR`` to a 0700 directory
    inside the build's locked work directory; ``tempfile`` still creates with ``O_EXCL`` and
    moves on to the next name when one exists.

``VOUCH_BUILD_CACHE=<dir>``
    Cython's translation (``.pyx`` to ``.c``/``.cpp``) goes through vouch's scoped cache
    gateway, whose URL (with its secret) is in ``<dir>/url``. Keys are SHA-256 digests over
    everything that decides the generated code: the translation key (:func:`_translation_key`)
    names a manifest, the list of files the last translation read, and the entry's key adds
    their contents (:func:`_entry_key`); the entry is the generated files. With the same
    variable, ``python -m vouch_buildenv auditwheel-repair`` runs ``auditwheel repair``
    through the same store (the repair cache, below). Counters go to
    ``<dir>/events-<pid>.jsonl`` for the build record. A broken gateway never fails the
    build: the translation or repair runs as if there were no cache.

Standard library only: it runs in whatever interpreter the cell builds with.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import importlib.abc
import importlib.util
import io
import json
import os
import random
import sys
import tempfile
import urllib.parse
import zipfile

#: Bumped when the key or the entry format changes, so old entries are never read.
FORMAT = 'vouch-cython-cache/1'

# CompilationOptions fields that cannot change the generated files: how chatty Cython is,
# and how cythonize decided to translate at all. Everything else is part of the key, so an
# option Cython adds later is keyed by default. (Cython's own cache also drops
# `compiler_directives`, which is wrong: directives such as `binding` or `linetrace` change
# the generated code. They stay in this key.)
_NOT_KEYED = frozenset((
    'verbose', 'quiet', 'show_version', 'errors_to_stderr', 'timestamps', 'cache',
    'depfile', 'create_extension',
))

# The files one translation may produce next to its `.c`/`.cpp` (Cython's
# CompilationResult: the C file, `public` header, `api` header, generated `.pxi`).
_EXTRA_SUFFIXES = ('.h', '_api.h', '.pxi')


# -- deterministic temporary names ----------------------------------------------------------

def _fix_temp_names() -> None:
    """tempfile's name sequence, seeded the same in every process that starts it."""
    base = getattr(tempfile, '_RandomNameSequence', None)
    if base is None:  # a private class: if a Python drops it, names stay random
        return

    class _FixedNames(base):
        @property
        def rng(self):
            pid = os.getpid()
            if getattr(self, '_vouch_pid', None) != pid:
                self._vouch_rng = random.Random('vouch-build-temp')
                self._vouch_pid = pid
            return self._vouch_rng

    tempfile._name_sequence = _FixedNames()


# -- the Cython translation cache -----------------------------------------------------------

class _Cache:
    """The gateway's key/value side, and this process's counters."""

    def __init__(self, state_dir: str, layer: str = 'cython') -> None:
        self.state_dir = state_dir
        self.layer = layer
        with open(os.path.join(state_dir, 'url'), encoding='utf-8') as f:
            url = f.read().strip()
        u = urllib.parse.urlsplit(url)
        # vouch wrote this file; anything but its loopback gateway means something is wrong,
        # and the secret must not leave the machine.
        if u.scheme != 'http' or u.hostname not in ('127.0.0.1', '::1') or not u.port:
            raise ValueError('the build cache URL is not a loopback gateway URL')
        self.host, self.port, self.base = u.hostname, u.port, u.path.rstrip('/')
        self.reads = True
        self.writes = True

    def _request(self, method: str, key: str, body: bytes | None = None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, f'{self.base}/{key}', body=body)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def get(self, key: str) -> bytes | None:
        if not self.reads:
            return None
        try:
            status, body = self._request('GET', key)
        except OSError as e:
            self.reads = self.writes = False
            self.event('gateway-error', key, str(e.__class__.__name__))
            return None
        if status == 200:
            return body
        if status != 404:
            self.reads = False
            self.event('gateway-error', key, f'GET {status}')
        return None

    def put(self, key: str, body: bytes) -> bool:
        if not self.writes:
            return False
        try:
            status, _ = self._request('PUT', key, body)
        except OSError as e:
            self.writes = False
            self.event('gateway-error', key, str(e.__class__.__name__))
            return False
        if status in (200, 201, 204):
            return True
        # 403: this scope may read but not write (a pull_request_target run).
        self.writes = False
        self.event('not-stored', key, f'PUT {status}')
        return False

    def event(self, kind: str, module: str, detail: str = '') -> None:
        line = json.dumps({'layer': self.layer, 'event': kind, 'module': module,
                           'detail': detail})
        path = os.path.join(self.state_dir, f'events-{os.getpid()}.jsonl')
        with open(path, 'a', encoding='utf-8') as f:
            f.write(line + '\n')


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


class _Unkeyable(Exception):
    """An option value this key cannot write down faithfully: the translation is not cached."""


def _canonical(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return {'bytes': value.hex()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda i: str(i[0]))}
    raise _Unkeyable(type(value).__name__)


def _record_digest(dist) -> str:
    """The digest of a distribution's installed files' hashes (its RECORD): a patched or
    rebuilt package of the same version is another package. Only the package's own files
    count: console scripts (`../../../bin/cython`) carry the venv's path in their shebang,
    and the dist-info's own files say how it was installed, not what it is."""
    lines = (dist.read_text('RECORD') or '').splitlines()
    record = '\n'.join(sorted(
        line for line in lines
        if line and not line.startswith('..') and '.dist-info/' not in line
        and '__pycache__' not in line
    ))
    return hashlib.sha256(record.encode('utf-8')).hexdigest()


@functools.lru_cache(maxsize=None)
def _cython_identity() -> dict:
    """Cython's version and the digest of its installed files."""
    import Cython
    from importlib import metadata
    try:
        record = _record_digest(metadata.distribution('Cython'))
    except metadata.PackageNotFoundError:
        record = None
    return {'version': Cython.__version__, 'record_sha256': record}


@functools.lru_cache(maxsize=None)
def _cython_dir() -> str:
    import Cython
    return os.path.dirname(os.path.realpath(Cython.__file__)) + os.sep


_SOURCE_SUFFIXES = ('.pyx', '.pxd', '.pxi')
# setuptools' output and VCS metadata: never on a cimport's search path.
_NOT_SEARCHED = frozenset(('build', '.git', '__pycache__'))


@functools.lru_cache(maxsize=None)
def _search_listing(roots: tuple[str, ...]) -> str:
    """A digest of which Cython source files exist under ``roots`` (names, not contents).

    Which file a cimport or include resolves to depends on what exists along the search
    path, not only on the files that were read: a new ``__init__.pxd`` or a shadowing
    ``.pxd`` changes the translation without changing any file it read before. So a new or
    removed source file anywhere on the search path changes every key.
    """
    names = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _NOT_SEARCHED)
            names.extend(os.path.join(dirpath, f) for f in sorted(filenames)
                         if f.endswith(_SOURCE_SUFFIXES))
    return hashlib.sha256('\n'.join(names).encode('utf-8')).hexdigest()


@functools.lru_cache(maxsize=None)
def _distributions() -> tuple[str, ...]:
    """What the venv holds: a pxd found on sys.path belongs to one of these."""
    from importlib import metadata
    return tuple(sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()))


def _digest(material) -> str:
    blob = json.dumps(material, sort_keys=True, separators=(',', ':')).encode('utf-8')
    return hashlib.sha256(blob).hexdigest()


def _translation_key(source: str, options, full_module_name) -> str:
    """The key of everything but the dependencies' contents: which Cython, run how, on what.

    With the dependency list it names (the manifest), it leads to the entry's key
    (:func:`_entry_key`), in the way ccache's direct mode keys a compile.
    """
    options_dict = {k: v for k, v in vars(options).items() if k not in _NOT_KEYED}
    cwd = os.getcwd()
    search = tuple(sorted({cwd, *(os.path.abspath(p) for p in options.include_path or ())}))
    return _digest({
        'format': FORMAT,
        'cython': _cython_identity(),
        'python': [sys.version, sys.implementation.cache_tag, sys.platform,
                   getattr(sys, 'abiflags', '')],
        'installed': _distributions(),
        'cwd': cwd,
        'search': _search_listing(search),
        'source': source,
        'module': full_module_name,
        'output': options.output_file,
        'options': _canonical(options_dict),
        'env': {k: v for k, v in sorted(os.environ.items()) if k.upper().startswith('CYTHON')},
    })


def _entry_key(translation: str, deps: list[str]) -> str:
    """The entry's key: the translation key and the content of every dependency."""
    return _digest({
        'translation': translation,
        'dependencies': [[p, _file_digest(p)] for p in deps],
    })


def _store_key(full_module_name, source: str, digest: str, kind: str = '') -> str:
    name = full_module_name or os.path.splitext(os.path.basename(source))[0]
    safe = ''.join(c if c.isalnum() or c in '._-' else '_' for c in name)[:200] or 'module'
    return f'cython/v1/{safe}/{digest}{kind}'


def _manifest_field(blob: bytes | None, fmt: str, translation: str, field: str):
    """``field`` of the manifest ``blob``, when it is one of format ``fmt`` written for
    ``translation``; ``None`` otherwise (a manifest that is not is a miss)."""
    try:
        manifest = json.loads(blob) if blob is not None else None
    except ValueError:
        return None
    if not isinstance(manifest, dict) or manifest.get('format') != fmt \
            or manifest.get('translation') != translation:
        return None
    return manifest.get(field)


def _read_manifest(blob: bytes | None, translation: str) -> list[str] | None:
    deps = _manifest_field(blob, FORMAT, translation, 'dependencies')
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        return None
    return deps


def _outputs(c_file: str) -> list[str]:
    base = os.path.splitext(c_file)[0]
    return [c_file] + [base + s for s in _EXTRA_SUFFIXES]


def _pack(digest: str, files: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        manifest = {'format': FORMAT, 'key': digest,
                    'files': {os.path.basename(p): _file_digest(p) for p in files}}
        z.writestr('vouch-cython.json', json.dumps(manifest, sort_keys=True))
        for p in files:
            z.write(p, os.path.basename(p))
    return buf.getvalue()


def _unpack(blob: bytes, digest: str, c_file: str) -> dict[str, bytes] | None:
    """The entry's files by path, when it is whole and is the entry for ``digest``."""
    allowed = {os.path.basename(p): p for p in _outputs(c_file)}
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            manifest = json.loads(z.read('vouch-cython.json'))
            if manifest.get('format') != FORMAT or manifest.get('key') != digest:
                return None
            names = manifest.get('files') or {}
            if os.path.basename(c_file) not in names:
                return None
            out = {}
            for name, sha in names.items():
                if name not in allowed:
                    return None
                data = z.read(name)
                if hashlib.sha256(data).hexdigest() != sha:
                    return None
                out[allowed[name]] = data
            return out
    except (zipfile.BadZipFile, KeyError, ValueError, OSError):
        return None


def _write_atomically(path: str, data: bytes) -> None:
    tmp = f'{path}.vouch-{os.getpid()}.tmp'
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)


class _Hit:
    """What ``compile_single`` returns on a hit: Cython's callers read only these."""

    num_errors = 0

    def __init__(self, files: dict[str, bytes], c_file: str) -> None:
        self.c_file = c_file
        base = os.path.splitext(c_file)[0]
        self.h_file = base + '.h' if base + '.h' in files else None
        self.api_file = base + '_api.h' if base + '_api.h' in files else None
        self.i_file = base + '.pxi' if base + '.pxi' in files else None
        self.listing_file = None
        self.object_file = None
        self.extension_file = None
        self.main_source_file = None
        self.embedded_metadata = None
        self.compilation_source = None

    def get_generated_source_files(self):
        return [f for f in (self.c_file, self.h_file, self.i_file, self.api_file) if f]


def _lookup(store: _Cache, source, options, full_module_name, c_file):
    """The translation key, its manifest's store key, and the entry's files on a hit."""
    translation = _translation_key(source, options, full_module_name)
    manifest_key = _store_key(full_module_name, source, translation, '.deps')
    deps = _read_manifest(store.get(manifest_key), translation)
    if deps is None:
        return translation, manifest_key, None
    try:
        digest = _entry_key(translation, deps)
    except OSError:  # a file the last translation read is gone: a miss
        return translation, manifest_key, None
    blob = store.get(_store_key(full_module_name, source, digest))
    if blob is None:
        return translation, manifest_key, None
    files = _unpack(blob, digest, c_file)
    if files is None:
        store.event('corrupt', full_module_name or source)
    return translation, manifest_key, files


def _store(store: _Cache, module, source, full_module_name, c_file, translation, manifest_key,
           read, before) -> None:
    """Stores a translation that just ran: its files, then the manifest naming them.

    The dependencies are every file Cython read (and the ones its dependency tree names, in
    case a read went unseen); the entry's key covers all of their contents. Cython's own
    files are covered by its identity in the translation key.
    """
    cython_dir = _cython_dir()
    deps = sorted({
        os.path.normpath(str(p)) for p in [source, *read]
        if not os.path.realpath(str(p)).startswith(cython_dir)
    })
    after = {p: _stat(p) for p in _outputs(c_file)}
    produced = [p for p, st in after.items() if st is not None and st != before[p]]
    if c_file not in produced:
        store.event('not-stored', module, 'no output written')
        return
    digest = _entry_key(translation, deps)
    manifest = json.dumps({'format': FORMAT, 'translation': translation,
                           'dependencies': deps}, sort_keys=True).encode('utf-8')
    # The entry first: a manifest never names an entry that is not there yet.
    if (store.put(_store_key(full_module_name, source, digest), _pack(digest, produced))
            and store.put(manifest_key, manifest)):
        store.event('stored', module)


def _wrap_compile_single(store: _Cache, original):
    from Cython import Utils

    # The parameters are compile_single's own (Cython 3.x), so cythonize_one's keyword call
    # reaches the original unchanged.
    def compile_single(source, options, full_module_name, cache=None, context=None,
                       fingerprint=None, **kwargs):
        def run():
            return original(source, options, full_module_name, cache=cache, context=context,
                            fingerprint=fingerprint, **kwargs)

        module = full_module_name or source
        deps_module = sys.modules.get('Cython.Build.Dependencies')
        tree = getattr(deps_module, '_dep_tree', None)
        # Only a translation cythonize() started is cached: its dependency tree is the one
        # that resolved this source's cimports and includes. Cython's own cache, an annotated
        # build or a listing file writes more than this entry would hold.
        if (tree is None or cache is not None or getattr(options, 'annotate', False)
                or getattr(options, 'use_listing_file', False) or not options.output_file):
            store.event('bypass', module)
            return run()
        c_file = options.output_file
        # The cache never fails a build: a fault of its own is a bypass (before Cython ran)
        # or an entry not stored (after).
        try:
            translation, manifest_key, files = _lookup(store, source, options,
                                                       full_module_name, c_file)
        except Exception as e:  # noqa: BLE001
            store.event('bypass', module, f'{e.__class__.__name__}: {e}')
            return run()
        if files is not None:
            for path, data in files.items():
                _write_atomically(path, data)
            store.event('hit', module)
            return _Hit(files, c_file)

        # A miss: translate, and note every file Cython reads.
        read = []
        real_open = Utils.open_source_file

        def recording_open(filename, *args, **kw):
            read.append(filename)
            return real_open(filename, *args, **kw)

        Utils.open_source_file = recording_open
        before = {p: _stat(p) for p in _outputs(c_file)}
        try:
            result = run()
        finally:
            Utils.open_source_file = real_open
        store.event('miss', module)
        if getattr(result, 'num_errors', 1):
            return result
        try:
            _store(store, module, source, full_module_name, c_file, translation, manifest_key,
                   [*read, *tree.all_dependencies(source)], before)
        except Exception as e:  # noqa: BLE001
            store.event('not-stored', module, f'{e.__class__.__name__}: {e}')
        return result

    return compile_single


def _stat(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` once ``name`` has been imported, before anyone uses it."""

    def __init__(self, name: str, then) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        then = self.then

        def exec_then(module):
            exec_module(module)
            then(module)

        spec.loader.exec_module = exec_then
        return spec


def _enable_cython_cache(state_dir: str) -> None:
    try:
        cache = _Cache(state_dir)
    except (OSError, ValueError) as e:
        sys.stderr.write(f'vouch: Cython translation cache off: {e}\n')
        return

    def patch(main_module) -> None:
        main_module.compile_single = _wrap_compile_single(cache, main_module.compile_single)

    if 'Cython.Compiler.Main' in sys.modules:
        patch(sys.modules['Cython.Compiler.Main'])
    else:
        sys.meta_path.insert(0, _AfterImport('Cython.Compiler.Main', patch))


_installed = False


def install() -> None:
    """Called by the ``.pth`` file at interpreter start. site.py can run that file twice (a
    venv's ``lib64`` is a link to ``lib``), and a second hook would wrap the first."""
    global _installed
    if _installed:
        return
    _installed = True
    if os.environ.get('VOUCH_DETERMINISTIC_TEMP') == '1':
        _fix_temp_names()
    state_dir = os.environ.get('VOUCH_BUILD_CACHE')
    if state_dir:
        _enable_cython_cache(state_dir)


# -- the repair cache -----------------------------------------------------------------------
#
# `auditwheel repair` on a warm CuPy rebuild takes longer than every cache hit before it
# together (13.5 s of 30: it reads every ELF file of a 100 MB wheel, resolves their
# libraries, and writes the wheel again). Its output is a function of the raw wheel, the
# tools, the options and the libraries it looked up, so it is cached like a translation: a
# translation key (:func:`_repair_key`) names a manifest of the library lookups the last
# repair made (which names, in which directories); the entry's key adds what each lookup
# would find now (:func:`_repair_entry_key`). Only a repair that grafted nothing is stored:
# a grafted library's bytes come from this machine, not from the wheel.

REPAIR_FORMAT = 'vouch-repair-cache/2'

# A repair that grafts nothing rewrites the dist-info's WHEEL and RECORD (and may patch an
# RPATH); anything bigger than this is not what a cached repair is for.
_REPAIR_MAX_CHANGED = 64 << 20


def _installed_identity() -> list:
    """Every distribution in the venv, with the digest of its installed files."""
    from importlib import metadata
    return sorted([d.metadata['Name'], d.version, _record_digest(d)]
                  for d in metadata.distributions())


def _repair_key(raw: str, options: list[str]) -> str:
    """Which wheel, repaired by which tools, how, against which library search path."""
    import platform
    import shutil
    patchelf = shutil.which('patchelf')
    return _digest({
        'format': REPAIR_FORMAT,
        'python': [sys.version, sys.implementation.cache_tag, sys.platform],
        'installed': _installed_identity(),
        # The lock installs patchelf as a console binary, outside what RECORD digests.
        'patchelf': _file_digest(patchelf) if patchelf else None,
        'machine': [platform.machine(), list(platform.libc_ver())],
        # Where libraries are looked for, from ld.so.conf and the environment: a directory
        # added in front changes what a lookup finds without changing any file found before.
        'ld_conf': _ld_conf(),
        'env': {k: v for k, v in sorted(os.environ.items())
                if k.startswith('AUDITWHEEL') or k == 'LD_LIBRARY_PATH'},
        'wheel': [os.path.basename(raw), _file_digest(raw)],
        'options': options,
    })


def _ld_conf() -> list:
    """The files auditwheel's library search path is read from (glibc's ld.so.conf and its
    usual includes, musl's path file), by content."""
    import glob
    files = ['/etc/ld.so.conf', *sorted(glob.glob('/etc/ld.so.conf.d/*')),
             *sorted(glob.glob('/etc/ld-musl-*.path'))]
    return [[f, _file_digest(f) if os.path.isfile(f) else None] for f in files]


def _found(directory: str, lib: str):
    """What a lookup of ``lib`` in ``directory`` finds: the file's content, or nothing."""
    path = os.path.join(directory, lib)
    if not os.path.exists(path):
        return None
    return [os.path.realpath(path), _file_digest(path)]


def _repair_entry_key(translation: str, lookups: list) -> str:
    return _digest({
        'translation': translation,
        'lookups': [[lib, [[d, _found(d, lib)] for d in dirs]] for lib, dirs in lookups],
    })


def _repair_store_key(wheel: str, digest: str, kind: str = '') -> str:
    safe = ''.join(c if c.isalnum() or c in '._-' else '_' for c in wheel)[:200] or 'wheel'
    return f'repair/v1/{safe}/{digest}{kind}'


def _read_lookups(blob: bytes | None, translation: str) -> list | None:
    lookups = _manifest_field(blob, REPAIR_FORMAT, translation, 'lookups')
    if not isinstance(lookups, list) or not all(
            isinstance(x, list) and len(x) == 2 and isinstance(x[0], str)
            and isinstance(x[1], list) and all(isinstance(d, str) for d in x[1])
            for x in lookups):
        return None
    return lookups


def _pack_repair(digest: str, raw: str, repaired: str) -> bytes:
    """The entry: the repaired wheel's name and members, each either a reference to the raw
    wheel's member of the same name (which the key's digest of the raw wheel pins) or its own
    bytes. Raises ValueError when the repair added members (grafted libraries) or changed too
    much to be worth storing."""
    with zipfile.ZipFile(raw) as zr:
        raw_digests = {i.filename: hashlib.sha256(zr.read(i)).hexdigest()
                       for i in zr.infolist() if not i.is_dir()}
    buf = io.BytesIO()
    members, changed = [], 0
    with zipfile.ZipFile(repaired) as zw, zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        for n, info in enumerate(zw.infolist()):
            data = zw.read(info)
            sha = hashlib.sha256(data).hexdigest()
            member = {'name': info.filename, 'sha256': sha, 'crc': info.CRC, 'size': len(data),
                      'date_time': list(info.date_time), 'create_system': info.create_system,
                      'external_attr': info.external_attr}
            if raw_digests.get(info.filename) == sha:
                member['from'] = 'raw'
            elif info.filename in raw_digests or info.filename.endswith('/'):
                member['from'] = f'm/{n}'
                changed += len(data)
                z.writestr(member['from'], data)
            else:
                raise ValueError(f'the repair added {info.filename}: grafted libraries are '
                                 "this machine's bytes, not the wheel's")
            members.append(member)
        if changed > _REPAIR_MAX_CHANGED:
            raise ValueError(f'the repair changed {changed} bytes of members')
        z.writestr('vouch-repair.json', json.dumps({
            'format': REPAIR_FORMAT, 'key': digest,
            'wheel': os.path.basename(repaired), 'members': members}, sort_keys=True))
    return buf.getvalue()


def _unpack_repair(blob: bytes, digest: str, raw: str, out_dir: str) -> str | None:
    """Writes the repaired wheel the entry describes into ``out_dir``; ``None`` (and nothing
    written) when the entry is not whole, is not the entry for ``digest``, or does not match
    the raw wheel.

    The wheel is written stored: normalize deflates every member again, so compressing here
    would be thrown away (it was most of a hit's time). A member taken from the raw wheel is
    checked by the size and CRC-32 in the raw wheel's directory (reading it checks the bytes
    against that CRC); the raw wheel itself is pinned by the key. A member of the entry is
    checked by its sha256.
    """
    tmp = None
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as z, zipfile.ZipFile(raw) as zr:
            manifest = json.loads(z.read('vouch-repair.json'))
            wheel = manifest.get('wheel')
            if manifest.get('format') != REPAIR_FORMAT or manifest.get('key') != digest \
                    or not isinstance(wheel, str) or not wheel.endswith('.whl') \
                    or os.path.basename(wheel) != wheel or wheel.startswith('.'):
                return None
            os.makedirs(out_dir, exist_ok=True)
            tmp = os.path.join(out_dir, f'.{wheel}.vouch-{os.getpid()}.tmp')
            with zipfile.ZipFile(tmp, 'w', zipfile.ZIP_STORED) as out:
                for m in manifest['members']:
                    if m['from'] == 'raw':
                        info = zr.getinfo(m['name'])
                        if info.CRC != m['crc'] or info.file_size != m['size']:
                            raise ValueError(f"{m['name']}: not the raw wheel's member")
                        data = zr.read(info)
                    else:
                        data = z.read(m['from'])
                        if hashlib.sha256(data).hexdigest() != m['sha256']:
                            raise ValueError(f"{m['name']}: digest differs")
                    info = zipfile.ZipInfo(m['name'], tuple(m['date_time']))
                    info.create_system = m['create_system']
                    info.external_attr = m['external_attr']
                    out.writestr(info, data)
            os.replace(tmp, os.path.join(out_dir, wheel))
            tmp = None
            return wheel
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, OSError,
            NotImplementedError):
        return None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _run_module(module: str, argv: list[str]) -> int:
    """``python -m <module> <argv...>`` in this process, with its exit status."""
    import runpy
    saved = sys.argv
    sys.argv = [module, *argv]
    try:
        runpy.run_module(module, run_name='__main__', alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        sys.stderr.write(f'{e.code}\n')
        return 1
    finally:
        sys.argv = saved
    return 0


def _auditwheel_repair(raw: str, out_dir: str, options: list[str]) -> int:
    """``auditwheel repair -w out_dir <options> raw``, through the repair cache when the build
    has one. The cache never fails a repair: a fault of its own is a bypass or an entry not
    stored, and auditwheel runs as it would without it."""
    argv = ['repair', '-w', out_dir, *options, raw]
    state_dir = os.environ.get('VOUCH_BUILD_CACHE')
    if not state_dir:
        return _run_module('auditwheel', argv)
    wheel = os.path.basename(raw)
    try:
        store = _Cache(state_dir, layer='repair')
    except (OSError, ValueError) as e:
        sys.stderr.write(f'vouch: repair cache off: {e}\n')
        return _run_module('auditwheel', argv)
    try:
        from auditwheel import lddtree
        find_lib = lddtree.find_lib
        translation = _repair_key(raw, options)
        manifest_key = _repair_store_key(wheel, translation, '.deps')
        lookups = _read_lookups(store.get(manifest_key), translation)
        if lookups is not None:
            digest = _repair_entry_key(translation, lookups)
            blob = store.get(_repair_store_key(wheel, digest))
            if blob is not None:
                repaired = _unpack_repair(blob, digest, raw, out_dir)
                if repaired is not None:
                    store.event('hit', wheel)
                    print(f'vouch: {wheel} repaired as {repaired} from the repair cache')
                    return 0
                store.event('corrupt', wheel)
    except Exception as e:  # noqa: BLE001
        store.event('bypass', wheel, f'{e.__class__.__name__}: {e}')
        return _run_module('auditwheel', argv)

    # A miss: repair, and note every library lookup auditwheel makes.
    recorded = []

    def recording_find_lib(platform, lib, ldpaths, *args, **kw):
        recorded.append([lib, [str(d) for d in ldpaths]])
        return find_lib(platform, lib, ldpaths, *args, **kw)

    lddtree.find_lib = recording_find_lib
    try:
        code = _run_module('auditwheel', argv)
    finally:
        lddtree.find_lib = find_lib
    store.event('miss', wheel)
    if code != 0:
        return code
    try:
        outputs = [f for f in os.listdir(out_dir) if f.endswith('.whl')]
        if len(outputs) != 1:
            raise ValueError(f'{len(outputs)} wheels in the output directory')
        lookups = [list(x) for x in dict.fromkeys(
            (lib, tuple(dirs)) for lib, dirs in recorded)]
        digest = _repair_entry_key(translation, lookups)
        blob = _pack_repair(digest, raw, os.path.join(out_dir, outputs[0]))
        manifest = json.dumps({'format': REPAIR_FORMAT, 'translation': translation,
                               'lookups': lookups}, sort_keys=True).encode('utf-8')
        if (store.put(_repair_store_key(wheel, digest), blob)
                and store.put(manifest_key, manifest)):
            store.event('stored', wheel)
    except Exception as e:  # noqa: BLE001
        store.event('not-stored', wheel, f'{e.__class__.__name__}: {e}')
    return 0


if __name__ == '__main__':
    # `python -m vouch_buildenv auditwheel-repair RAW OUT_DIR [auditwheel repair options]`
    if len(sys.argv) >= 4 and sys.argv[1] == 'auditwheel-repair':
        sys.exit(_auditwheel_repair(sys.argv[2], sys.argv[3], sys.argv[4:]))
    sys.stderr.write('usage: python -m vouch_buildenv auditwheel-repair RAW OUT_DIR [OPTIONS]\n')
    sys.exit(2)
