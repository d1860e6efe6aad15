#!/usr/bin/env python3
"""Fetch CuPy's real kernel cache module for tests/it/kernel_cache.rs.

Downloads the CuPy 14.2.0 sdist once (sha256-pinned) from PyPI into
DEST (default: target/test-tools/cupy-14.2.0), and lays out

    DEST/stub/cupy/__init__.py              empty
    DEST/stub/cupy/cuda/__init__.py         empty
    DEST/stub/cupy/cuda/_compiler_cache.py  the sdist's file, byte for byte

so `import cupy.cuda._compiler_cache` works without CuPy's compiled parts (the
real `cupy/__init__.py` needs them; the module itself imports only abc,
hashlib, os and tempfile). Why not `pip download cupy==14.2.0`: pip prepares
the sdist's metadata first, and CuPy's build then fails without CUDA.

Standard library only. Prints DEST/stub. Exits 1 with a message on any
failure: the test that needs the tree fails loudly rather than skipping.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = '14.2.0'
SDIST = f'cupy-{VERSION}.tar.gz'
SDIST_SHA256 = (
    'cfed725e612178cfbdbf62f4a3a598b60edecbbca718c0d4580c21a16ae4a62c')
INDEX = 'https://pypi.org/simple/cupy/'
MEMBER = f'cupy-{VERSION}/cupy/cuda/_compiler_cache.py'
MAX_BYTES = 16 << 20  # the sdist is 4.1 MB


def fail(msg: str) -> None:
    print(f'fetch-cupy-compiler-cache: {msg}', file=sys.stderr)
    sys.exit(1)


def get(url: str, accept: str | None = None) -> bytes:
    req = urllib.request.Request(url)
    if accept:
        req.add_header('Accept', accept)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read(MAX_BYTES + 1)
    except OSError as e:
        fail(f'cannot download {url}: {e}')
    if len(data) > MAX_BYTES:
        fail(f'{url} is over {MAX_BYTES} bytes')
    return data


def sdist_url() -> str:
    """The sdist's URL, from PyPI's JSON simple index (PEP 691)."""
    index = json.loads(get(INDEX, 'application/vnd.pypi.simple.v1+json'))
    for f in index.get('files', []):
        if f.get('filename') == SDIST:
            if f.get('hashes', {}).get('sha256') != SDIST_SHA256:
                fail(f'{INDEX} lists {SDIST} with sha256 '
                     f'{f.get("hashes")}, expected {SDIST_SHA256}')
            return f['url']
    fail(f'{INDEX} does not list {SDIST}')


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix='.tmp-')
    with os.fdopen(fd, 'wb') as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        root / 'target' / 'test-tools' / f'cupy-{VERSION}')
    sdist = dest / SDIST
    data = sdist.read_bytes() if sdist.is_file() else b''
    if sha256(data) != SDIST_SHA256:
        data = get(sdist_url())
        if sha256(data) != SDIST_SHA256:
            fail(f'{SDIST} has sha256 {sha256(data)}, expected '
                 f'{SDIST_SHA256}')
        write_atomically(sdist, data)
    with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as tar:
        try:
            member = tar.getmember(MEMBER)
        except KeyError:
            fail(f'{SDIST} has no {MEMBER}')
        f = tar.extractfile(member) if member.isfile() else None
        if f is None:
            fail(f'{MEMBER} in {SDIST} is not a regular file')
        module = f.read()
    stub = dest / 'stub'
    # Read and written by name, never extracted by path: nothing in the
    # archive decides where a file lands.
    write_atomically(stub / 'cupy' / '__init__.py', b'')
    write_atomically(stub / 'cupy' / 'cuda' / '__init__.py', b'')
    write_atomically(stub / 'cupy' / 'cuda' / '_compiler_cache.py', module)
    print(stub)


if __name__ == '__main__':
    main()
