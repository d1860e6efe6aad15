"""CuPy's kernel cache through vouch's scoped cache gateway.

``VouchKernelCacheBackend`` plugs into CuPy's pluggable kernel cache
(``cupy.cuda._compiler_cache``, CuPy 14.2+) the way CuPy's own GCS backend
(``tests/cupy_tests/_gcp_kernel_cache_backend.py``, cupy/cupy#9738) does, but
it talks to ``vouch cache serve`` on loopback instead of a bucket. The gateway
decides the scopes: a pull request's test run reads main's kernels and writes
nothing (its saves stay on local disk); every kernel served is signed by the
trusted runs, so none loads a kernel a PR compiled. See README.md next to this
file.

Kernels stay on local disk too (this class *is* CuPy's disk backend), so a hot
kernel never round-trips. The gateway holds the same bytes the disk does: the
cubin behind its SHA-1 hex digest, which ``load`` checks before using them.

The gateway URL carries the gateway's secret. It is read from the file
``vouch cache serve --url-file`` wrote (``VOUCH_CACHE_URL_FILE``), never from a
command line, and never logged: messages name the kernel, not the URL.

A broken gateway never breaks a test run: ``load`` then returns None (CuPy
compiles) and ``save`` keeps the local copy; a warning goes to ``logging``.

Standard library only. It relies on the disk backend's ``_encode_cubin``,
``_decode_cubin`` and ``_write_encoded``, as CuPy's own GCS backend does; both
are experimental CuPy API, tested here against CuPy 14.2.0.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import logging
import os
import platform
import re
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

from cupy.cuda._compiler_cache import DiskKernelCacheBackend

__all__ = [
    'URL_FILE_ENV',
    'VouchKernelCacheBackend',
    'default_namespace',
    'install',
]

log = logging.getLogger(__name__)

#: The environment variable naming the file that holds the gateway URL.
URL_FILE_ENV = 'VOUCH_CACHE_URL_FILE'

# vouch's key rule (vouch_cache::check_key): `/`-separated parts of these.
_PART = re.compile(r'[A-Za-z0-9._-]+\Z')


def _is_part(value: str) -> bool:
    return bool(_PART.match(value)) and value not in ('.', '..')


def _is_key(key: str) -> bool:
    # vouch caps whole keys at 1024 bytes: leave room for `kv/` and the name.
    return 0 < len(key) <= 900 and all(_is_part(p) for p in key.split('/'))


def _as_part(value: str) -> str:
    """``value`` if it is a valid key part, else a digest that is one."""
    if _is_part(value):
        return value
    return hashlib.sha256(value.encode('utf-8')).hexdigest()[:40]


def _platform_subdir() -> str:
    """The conda-style platform, as CuPy's GCS backend names it."""
    machine = platform.machine().lower()
    if sys.platform.startswith('linux'):
        if machine == 'x86_64':
            return 'linux-64'
        if machine in ('aarch64', 'arm64'):
            return 'linux-aarch64'
    if sys.platform.startswith('win'):
        return 'win-64'
    return _as_part(f'{sys.platform}-{machine}')


def default_namespace() -> str:
    """``cupy-kernels/<CUPY_CACHE_KEY>/<platform>/CUDA_<maj>_<min>``.

    The layout of CuPy's GCS backend: kernels of another CuPy build (its
    header checksum), platform or NVRTC version never share a key.
    """
    from cupy.cuda import compiler

    major, minor = compiler._get_nvrtc_version()
    return '/'.join((
        'cupy-kernels',
        _as_part(str(compiler._get_cupy_cache_key())),
        _platform_subdir(),
        f'CUDA_{int(major)}_{int(minor)}',
    ))


def _gateway_base(url: str) -> str:
    """``url`` when it is ``http://<loopback ip>:<port>/<secret>``.

    The message never repeats the URL: it holds the secret.
    """
    def bad(why: str) -> ValueError:
        return ValueError(
            f'the gateway URL {why}; expected http://<loopback IP>:<port>/'
            '<secret>, what `vouch cache serve --url-file` writes')

    try:
        u = urllib.parse.urlsplit(url)
        port = u.port
    except ValueError:
        raise bad('does not parse') from None
    if u.scheme != 'http':
        raise bad('is not http://')
    if u.username is not None or u.password is not None:
        raise bad('has a user or password')
    if u.query or u.fragment:
        raise bad('has a query or fragment')
    try:
        loopback = ipaddress.ip_address(u.hostname or '').is_loopback
    except ValueError:
        loopback = False
    # Anything else would send the kernels, and the secret, off this machine.
    if not loopback or port is None:
        raise bad('is not a loopback IP address with a port')
    segments = u.path.split('/')
    if len(segments) != 2 or not _is_part(segments[1]):
        raise bad('has no secret path segment')
    return url


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # The gateway never redirects; following one would carry a request (and
    # a kernel) somewhere the URL check above never saw.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class VouchKernelCacheBackend(DiskKernelCacheBackend):
    """CuPy's disk kernel cache, backed by vouch's scoped cache gateway.

    Args:
        gateway_url: ``http://127.0.0.1:<port>/<secret>`` as ``vouch cache
            serve`` wrote it. Prefer :meth:`from_url_file`.
        local_cache_dir: The local layer (CuPy's default:
            ``CUPY_CACHE_DIR`` or ``~/.cupy/kernel_cache``).
        namespace: Key prefix under the gateway's ``/kv/``; defaults to
            :func:`default_namespace`.
        timeout: Seconds per gateway request.

    Raises:
        ValueError: the URL or namespace is not what is expected (the message
            never quotes the URL).
    """

    def __init__(
        self,
        gateway_url: str,
        *,
        local_cache_dir: str | None = None,
        namespace: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(local_cache_dir)
        self._base = _gateway_base(gateway_url)
        if namespace is None:
            namespace = default_namespace()
        if not _is_key(namespace):
            raise ValueError(
                f'namespace {namespace!r} is not `/`-separated parts of '
                '[A-Za-z0-9._-]')
        self._namespace = namespace
        self._timeout = timeout
        # No proxy: the URL is loopback, and a proxy from the environment
        # (http_proxy) would receive the secret and the kernels.
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), _NoRedirect())
        self._reads = True
        self._writes = True
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    @classmethod
    def from_url_file(
        cls, path: str | os.PathLike[str] | None = None, **kwargs
    ) -> VouchKernelCacheBackend:
        """The backend for the URL in ``path`` (default: ``$VOUCH_CACHE_URL_FILE``)."""
        if path is None:
            path = os.environ.get(URL_FILE_ENV)
            if not path:
                raise ValueError(
                    f'{URL_FILE_ENV} is not set; it names the file '
                    '`vouch cache serve --url-file` writes')
        with open(path, encoding='utf-8') as f:
            url = f.read().strip()
        return cls(url, **kwargs)

    @property
    def namespace(self) -> str:
        return self._namespace

    def __repr__(self) -> str:
        return f'{type(self).__name__}(namespace={self._namespace!r})'

    def load(self, name: str) -> bytes | None:
        cubin = super().load(name)
        if cubin is not None or not self._reads or not _is_part(name):
            return cubin
        status, data = self._request('GET', name)
        if status == 200:
            cubin = self._decode_cubin(data)
            if cubin is None:
                self._warn(
                    'corrupt', 'kernel %s from the cache gateway fails its '
                    'hash check; compiling it', name)
                return None
            self._write_encoded(name, data)
            return cubin
        if status == 403:
            self._reads = self._writes = False
            self._warn(
                'secret', 'the cache gateway refused the request (a wrong or '
                'stale gateway URL?); kernels are compiled and kept on local '
                'disk only for the rest of this run')
        elif status not in (None, 404):
            self._warn(
                f'get-{status}', 'the cache gateway answered HTTP %s for '
                'kernel %s; compiling it', status, name)
        return None

    def save(self, name: str, cubin: bytes, source: str) -> None:
        super().save(name, cubin, source)
        if not self._writes or not _is_part(name):
            return
        status, _ = self._request('PUT', name, self._encode_cubin(cubin))
        if status in (None, 200, 201, 204):
            return
        if status == 403:
            # Read-only scopes (pull_request_target, workflow_run) refuse
            # every write: saying so once is enough.
            self._writes = False
            self._warn(
                'read-only', 'the cache gateway refused to store kernel %s '
                '(this run\'s cache scope is read-only); kernels stay on '
                'local disk only', name)
        elif status == 413:
            self._warn(
                f'too-large-{name}', 'kernel %s (%d bytes) is over the cache '
                'gateway\'s size cap; kept on local disk only', name,
                len(cubin))
        else:
            self._warn(
                f'put-{status}', 'the cache gateway answered HTTP %s when '
                'storing kernel %s; kept on local disk only', status, name)

    def _request(
        self, method: str, name: str, data: bytes | None = None
    ) -> tuple[int | None, bytes]:
        """(HTTP status, body); (None, b'') when the gateway is unreachable."""
        req = urllib.request.Request(
            f'{self._base}/kv/{self._namespace}/{name}', data=data,
            method=method)
        if data is not None:
            req.add_header('Content-Type', 'application/octet-stream')
        try:
            with self._opener.open(req, timeout=self._timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            e.close()
            return e.code, b''
        except (OSError, http.client.HTTPException) as e:
            # Gone or hung: every later request would fail the same way (a
            # hung one after the whole timeout), so stop asking.
            self._reads = self._writes = False
            self._warn(
                'unreachable', 'the cache gateway is unreachable (%s); '
                'kernels are compiled and kept on local disk only for the '
                'rest of this run', self._redact(e))
            return None, b''

    def _redact(self, e: BaseException) -> str:
        # urllib's messages carry no URL today; this keeps it that way.
        return f'{type(e).__name__}: {e}'.replace(self._base, '<gateway>')

    def _warn(self, kind: str, msg: str, *args) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        log.warning(msg, *args)


def install(
    url_file: str | os.PathLike[str] | None = None,
    *,
    local_cache_dir: str | None = None,
    namespace: str | None = None,
    timeout: float = 10.0,
) -> VouchKernelCacheBackend | None:
    """Make the gateway CuPy's kernel cache; returns the backend.

    ``url_file`` defaults to ``$VOUCH_CACHE_URL_FILE``. When no usable gateway
    URL is there, CuPy keeps its own disk cache, a warning is logged, and this
    returns None: a test run never fails for want of a cache.
    """
    try:
        backend = VouchKernelCacheBackend.from_url_file(
            url_file, local_cache_dir=local_cache_dir, namespace=namespace,
            timeout=timeout)
    except Exception as e:  # noqa: BLE001 (no cache is never fatal)
        # The messages above never quote the URL; a file error names the
        # file, not its contents.
        log.warning(
            'not using the vouch cache gateway for CuPy kernels (%s: %s); '
            'CuPy keeps its default kernel cache', type(e).__name__, e)
        return None
    from cupy.cuda import compiler

    compiler._set_kernel_cache_backend(backend)
    log.info(
        'CuPy kernel cache: vouch cache gateway, namespace %s',
        backend.namespace)
    return backend
