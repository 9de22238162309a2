"""HTTP(S) sources through `requests`, bounded in time and size.

- One deadline bounds the whole download, every redirect hop included. A per-socket timeout
  cannot do that (a server trickling one byte per second never trips it), so every socket this
  download opens is registered with a watchdog timer that shuts it down at the deadline; any
  blocked read then returns at once and the fetch reports the timeout.
- Redirects are followed here, not by `requests`, so each hop is checked against the policy.
- Under `allow_private_networks=false` the host is resolved once, every address checked, and
  the request sent to the checked address (URL host replaced by the IP; `Host` header, TLS SNI
  and certificate check keep the name), so DNS cannot rebind between the check and the connect.
- Proxies come from the environment (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY` with
  its CIDR and host:port entries), matched by `requests` against the URL as written.
"""

from __future__ import annotations

import contextvars
import ipaddress
import os
import re
import socket
import threading
import time
from types import TracebackType
from typing import Any, cast
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
import requests.utils
import urllib3.poolmanager
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .._spec import FetchPolicy
from ..errors import FetchError, MmError
from .budget import Budget
from .cancel import CancelScope, check_cancelled, current_scope
from .policy import check_domain, checked_address, resolve_timeout
from .sources import describe

MAX_REDIRECTS = 5
_CHUNK = 1 << 20
_DEFAULT_PORT = {"http": 80, "https": 443}
_POOL_PREFIX = re.compile(r"^<?[\w.]+(?: object at \w+>|\(host='[^']*', port=\d+\)): ")
_HEADERS = {"User-Agent": "sglang-mm", "Accept": "*/*", "Accept-Encoding": "identity"}


class Deadline:
    """The whole-download clock and its watchdog (see the module docstring)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._expires = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._fired = False
        self._closed = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._token: contextvars.Token[Deadline | None] | None = None
        self._scope: CancelScope | None = None

    def __enter__(self) -> Deadline:
        self._token = _CURRENT.set(self)
        self._scope = current_scope()
        if self._scope is not None:
            self._scope.add_hook(self._fire)  # a cancelled request shuts its sockets too
        self._timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._timer.cancel()
        if self._scope is not None:
            self._scope.remove_hook(self._fire)
        with self._lock:
            self._closed = True
            self._sockets.clear()
        if self._token is not None:
            _CURRENT.reset(self._token)

    @property
    def expired(self) -> bool:
        return self._fired or time.monotonic() >= self._expires

    def remaining(self) -> float:
        """Seconds left; raises the timeout error once there are none, and the cancellation
        error once the request is cancelled."""
        if self._scope is not None:
            self._scope.check()
        left = self._expires - time.monotonic()
        if left <= 0 or self._fired:
            raise self.error()
        return left

    def error(self) -> FetchError:
        return FetchError(
            f"download timed out after {self.seconds:.3g} s (fetch timeout, whole download)"
        )

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self._closed:
                return
            if self._fired:
                _shutdown(sock)
            else:
                self._sockets.append(sock)

    def _fire(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._fired = True
            for sock in self._sockets:
                _shutdown(sock)


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "sglang_mm_fetch_deadline", default=None
)


def _shutdown(sock: socket.socket) -> None:
    # The plain socket method even on an SSLSocket: it only wakes blocked reads with EOF and
    # leaves the TLS object alone. A socket already closed raises OSError (its fd is -1, so a
    # reused descriptor number is never touched).
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def _watch(sock: socket.socket) -> None:
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _watch(sock)
        return sock


class _WatchedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _watch(sock)  # covers a proxy's CONNECT exchange before TLS
        return sock

    def connect(self) -> None:
        super().connect()
        if self.sock is not None:
            _watch(self.sock)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS: dict[str, type[HTTPConnectionPool]] = {
    "http": _WatchedHTTPPool,
    "https": _WatchedHTTPSPool,
}


class _Adapter(HTTPAdapter):
    """`HTTPAdapter` whose sockets report to the deadline and whose TLS, when the URL names a
    pinned IP, still sends SNI for and verifies the certificate of the name in `Host`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        # SOCKS managers bring their own pool classes; leave those alone.
        if manager.pool_classes_by_scheme is urllib3.poolmanager.pool_classes_by_scheme:
            manager.pool_classes_by_scheme = _POOLS
        return manager

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> Any:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(
            request, verify, cert
        )
        extra = cast(dict[str, Any], pool_kwargs)
        name = _host_of_header(request.headers.get("Host"))
        if host_params.get("scheme") == "https" and name and name != host_params.get("host"):
            extra["server_hostname"] = name
            extra["assert_hostname"] = name
        return host_params, pool_kwargs


def _host_of_header(value: str | bytes | None) -> str | None:
    if not value:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    if text.startswith("["):
        return text[1 : text.find("]")]
    return text.rsplit(":", 1)[0] if ":" in text else text


def fetch_http(url: str, policy: FetchPolicy, budget: Budget) -> bytes:
    """GET `url` under the policy: redirects re-checked per hop, the stream cut one byte past
    its cap, the whole exchange bounded by the fetch timeout. Every failure is a FetchError
    (or a LimitError for a cap); sockets are always closed."""
    with Deadline(resolve_timeout(policy)) as deadline, requests.Session() as session:
        session.trust_env = False  # proxies are resolved per hop below; no .netrc credentials
        adapter = _Adapter()
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        try:
            return _get(session, url, policy, budget, deadline)
        except MmError:
            check_cancelled()
            if deadline.expired:
                raise deadline.error() from None
            raise
        except Exception as err:
            check_cancelled()
            if deadline.expired:
                raise deadline.error() from None
            raise FetchError(f"{_explain(err)} (fetching {_shown(url)})") from None


def _get(
    session: requests.Session,
    url: str,
    policy: FetchPolicy,
    budget: Budget,
    deadline: Deadline,
) -> bytes:
    current = url
    for hop in range(MAX_REDIRECTS + 1):
        deadline.remaining()  # between hops: stop if out of time or cancelled
        response, logical = _send(session, current, policy, deadline, hop)
        try:
            target = session.get_redirect_target(response)
            if target is None:
                return _read_body(response, budget, deadline, _shown(logical))
            if hop == MAX_REDIRECTS:
                raise FetchError(
                    f"more than {MAX_REDIRECTS} redirects (the last one from {_shown(logical)})"
                )
            current = urljoin(logical, target).split("#", 1)[0]
        finally:
            response.close()
    raise AssertionError("unreachable")


def _send(
    session: requests.Session,
    url: str,
    policy: FetchPolicy,
    deadline: Deadline,
    hop: int,
) -> tuple[requests.Response, str]:
    """One request, after the policy checks of its hop; returns the response (headers read)
    and the URL as the policy saw it (redirects resolve against that, not the pinned IP)."""
    via = f"redirect {hop} to " if hop else ""
    try:
        prepared = requests.Request("GET", url, headers=_HEADERS).prepare()
        logical = str(prepared.url)
        parts = urlsplit(logical)
        port = parts.port
    except Exception as err:
        raise FetchError(f"invalid URL {via}{_shown(url)}: {err}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORT:
        raise FetchError(f"{via}{_shown(url)} refused: only http and https URLs are fetched")
    host = parts.hostname
    if not host:
        raise FetchError(f"URL {via}{_shown(url)} has no host")
    try:
        check_domain(host, policy)
        if not policy.allow_private_networks:
            address = checked_address(host, port or _DEFAULT_PORT[scheme], deadline.remaining())
            _pin(prepared, parts, address)
    except FetchError as err:
        if hop:
            raise FetchError(f"{via}{_shown(logical)}: {err}") from None
        raise
    proxies = _proxies_for(logical)
    left = deadline.remaining()
    response = session.send(
        prepared,
        stream=True,
        timeout=(left, left),
        verify=_verify(),
        proxies=proxies,
        allow_redirects=False,
    )
    if response.status_code >= 400:
        response.close()
        reason = f" {response.reason}" if response.reason else ""
        raise FetchError(f"HTTP status {response.status_code}{reason} from {_shown(logical)}")
    if response.status_code < 200 or (response.status_code >= 300 and not response.is_redirect):
        response.close()
        raise FetchError(f"unexpected HTTP status {response.status_code} from {_shown(logical)}")
    return response, logical


def _pin(prepared: requests.PreparedRequest, parts: Any, address: Any) -> None:
    """Send the request to the checked address, keeping the name for `Host` (and for TLS)."""
    host = parts.hostname
    shown_host = f"[{host}]" if ":" in host else host
    port = parts.port
    scheme = parts.scheme.lower()
    prepared.headers["Host"] = (
        shown_host if port in (None, _DEFAULT_PORT[scheme]) else f"{shown_host}:{port}"
    )
    ip = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    netloc = ip if port is None else f"{ip}:{port}"
    prepared.url = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _read_body(
    response: requests.Response, budget: Budget, deadline: Deadline, shown: str
) -> bytes:
    cap, limit = budget.stream_cap()
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    declared = response.headers.get("Content-Length")
    if declared is not None and encoding in ("", "identity"):
        try:
            size = int(declared)
        except ValueError:
            size = -1
        if size > cap:
            raise budget.over_cap(limit, f"Content-Length {size} of {shown} (refused unread)")
    chunks: list[bytes] = []
    have = 0
    while True:
        chunk = response.raw.read(min(_CHUNK, cap + 1 - have), decode_content=True)
        if not chunk:
            break
        chunks.append(chunk)
        have += len(chunk)
        if have > cap:
            raise budget.over_cap(limit, f"body of {shown} (cut after {have} bytes)")
        deadline.remaining()
    if deadline.expired:  # the watchdog may have ended the stream early
        raise deadline.error()
    data = b"".join(chunks)
    budget.charge(len(data), f"body of {shown}")
    return data


def _proxies_for(url: str) -> dict[str, str]:
    """The environment's proxy for `url` as written (NO_PROXY matched on its real host)."""
    proxy = requests.utils.select_proxy(url, requests.utils.get_environ_proxies(url))
    return {"http": proxy, "https": proxy} if proxy else {}


def _verify() -> str | bool:
    return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True


def _shown(url: str) -> str:
    """A URL for a message: credentials dropped, length bounded."""
    try:
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            netloc = parts.netloc.rsplit("@", 1)[-1]
            url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    except ValueError:
        pass
    return describe(url, 200)


def _explain(err: Exception) -> str:
    """A short cause for a transport failure (requests nests urllib3's reason several deep)."""
    kinds: list[tuple[type[Exception], str]] = [
        (requests.exceptions.ProxyError, "proxy error"),
        (requests.exceptions.SSLError, "TLS error"),
        (requests.exceptions.ConnectTimeout, "connection timed out"),
        (requests.exceptions.ReadTimeout, "read timed out"),
        (requests.exceptions.ChunkedEncodingError, "connection broken"),
        (requests.exceptions.ConnectionError, "connection failed"),
    ]
    label = next((name for cls, name in kinds if isinstance(err, cls)), type(err).__name__)
    cause: BaseException = err
    for _ in range(8):
        inner = getattr(cause, "reason", None)
        if not isinstance(inner, BaseException) and cause.args:
            inner = cause.args[0] if isinstance(cause.args[0], BaseException) else None
        if not isinstance(inner, BaseException):
            break
        cause = inner
    text = _POOL_PREFIX.sub("", str(cause))
    return label if cause is err and not text else f"{label}: {text}"
