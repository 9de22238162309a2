"""A real HTTP server on 127.0.0.1 for tests (fetch, driver, server), on a random port.

Fixtures (registered in tests/conftest.py):
- ``http_server``: the session's shared server, its request log reset and the proxy and
  ``REQUEST_TIMEOUT`` environment variables cleared for the test.
- ``make_http_server``: a factory for extra servers (a proxy, a TLS origin), closed after the test.

Routes (GET; a query string is allowed on every route):
    /bytes/N             N bytes of ``payload(N)`` with Content-Length
    /stream/N            the same, close-delimited (no Content-Length)
    /chunked/N           the same, chunked transfer encoding
    /status/CODE         an empty response with that status
    /slow/N?interval=S   N bytes with Content-Length, one byte every S seconds
    /slow-headers?interval=S&count=K   the status line, then one header line every S seconds
    /redirect/K          302 to /redirect/K-1; /redirect/0 serves /bytes/16 (``?status=307``...)
    /redirect-to?url=U   302 to U (``?status=...`` too)
    /content/NAME        bytes registered with ``server.put(NAME, data)``
A request in absolute form (the client uses this server as its HTTP proxy) is served by its
path and logged with ``proxied=True``; ``CONNECT`` is tunnelled to ``server.tunnel_to`` when set.
Every request is logged as a ``Seen`` with the body bytes actually written, so a test can prove
that a client stopped reading early.
"""

from __future__ import annotations

import contextlib
import http.server
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import pytest

PROXY_ENV = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "REQUEST_TIMEOUT",
]

_BLOCK = bytes(range(256)) * 256  # 64 KiB


def payload(n: int) -> bytes:
    """The body every byte route serves for size ``n``."""
    return (_BLOCK * (n // len(_BLOCK) + 1))[:n]


def _payload_chunks(n: int) -> Iterator[bytes]:
    left = n
    while left > 0:
        chunk = _BLOCK[: min(left, len(_BLOCK))]
        left -= len(chunk)
        yield chunk


@dataclass
class Seen:
    """One request as the server received it, and how much of its body went out."""

    method: str
    target: str  # the request-target as sent: origin form, absolute form or host:port
    path: str
    headers: dict[str, str]
    proxied: bool
    sent: int = 0
    client_gone: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalHTTPServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def setup(self) -> None:
        # A small send buffer makes "the client stopped reading" visible in `Seen.sent`.
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(5)
            self.request.do_handshake()
        super().setup()

    def do_GET(self) -> None:
        proxied = self.path.lower().startswith(("http://", "https://"))
        parts = urlsplit(self.path)
        seen = Seen(
            method=self.command,
            target=self.path,
            path=parts.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            proxied=proxied,
        )
        self.server.log(seen)
        try:
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            self._route(seen, parts.path, query)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError, OSError):
            seen.client_gone = True
            self.close_connection = True
        finally:
            seen.done.set()

    def do_CONNECT(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        seen = Seen("CONNECT", self.path, "", headers, proxied=True)
        self.server.log(seen)
        try:
            if self.server.tunnel_to is None:
                self.send_error(502, "no tunnel configured")
                return
            upstream = socket.create_connection(self.server.tunnel_to, timeout=5)
            with upstream:
                self.send_response(200, "Connection established")
                self.end_headers()
                _relay(self.connection, upstream)
            self.close_connection = True
        finally:
            seen.done.set()

    def _route(self, seen: Seen, path: str, query: dict[str, str]) -> None:
        parts = path.strip("/").split("/")
        head, arg = parts[0], "/".join(parts[1:])
        if head in ("bytes", "stream", "chunked"):
            n = int(arg)
            self._body(seen, _payload_chunks(n), {"bytes": n, "stream": None, "chunked": -1}[head])
        elif head == "status":
            self._body(seen, [], 0, status=int(arg))
        elif head == "slow":
            n, interval = int(arg), float(query.get("interval", "0.05"))
            self._body(seen, _trickle(n, interval), n)
        elif head == "slow-headers":
            self._slow_headers(float(query.get("interval", "0.05")), int(query.get("count", "200")))
        elif head == "redirect":
            k = int(arg)
            if k <= 0:
                self._body(seen, [payload(16)], 16)
            else:
                self._redirect(seen, f"/redirect/{k - 1}", query)
        elif head == "redirect-to":
            self._redirect(seen, query["url"], query)
        elif head == "content" and arg in self.server.contents:
            data, ctype = self.server.contents[arg]
            self._body(seen, [data], len(data), ctype=ctype)
        else:
            self._body(seen, [b"not found"], 9, status=404)

    def _redirect(self, seen: Seen, location: str, query: dict[str, str]) -> None:
        status = int(query.get("status", "302"))
        self._body(seen, [], 0, status=status, extra={"Location": location})

    def _body(
        self,
        seen: Seen,
        chunks: Iterable[bytes],
        length: int | None,
        *,
        status: int = 200,
        ctype: str = "application/octet-stream",
        extra: dict[str, str] | None = None,
    ) -> None:
        """Send a response: ``length`` >= 0 sets Content-Length, -1 means chunked, None means
        close-delimited."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if length is None:
            self.send_header("Connection", "close")
            self.close_connection = True
        elif length < 0:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        for chunk in chunks:
            if length is not None and length < 0:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            else:
                self.wfile.write(chunk)
            seen.sent += len(chunk)
        if length is not None and length < 0:
            self.wfile.write(b"0\r\n\r\n")

    def _slow_headers(self, interval: float, count: int) -> None:
        self.send_response_only(200)
        self.flush_headers()
        for i in range(count):
            self.wfile.write(b"X-Slow-%d: x\r\n" % i)
            time.sleep(interval)
        self.wfile.write(b"Content-Length: 0\r\n\r\n")


def _trickle(n: int, interval: float) -> Iterator[bytes]:
    for i in range(n):
        if i:
            time.sleep(interval)
        yield b"x"


def _relay(a: socket.socket, b: socket.socket) -> None:
    with selectors.DefaultSelector() as sel:
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        while True:
            for key, _ in sel.select(timeout=5):
                src: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = src.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
                except OSError:
                    return


class LocalHTTPServer(http.server.ThreadingHTTPServer):
    """The test server; ``tls=(certfile, keyfile)`` makes it an HTTPS origin."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port: int = self.server_address[1]
        self.seen: list[Seen] = []
        self.contents: dict[str, tuple[bytes, str]] = {}
        self.tunnel_to: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        if tls is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(*tls)
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def origin(self) -> str:
        scheme = "https" if self._tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def put(self, name: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Serve ``data`` at /content/NAME; returns its URL."""
        self.contents[name] = (data, content_type)
        return self.url(f"/content/{name}")

    def log(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def reset(self) -> None:
        with self._lock:
            self.seen = []
        self.contents.clear()
        self.tunnel_to = None

    def wait_done(self, timeout: float = 5.0) -> list[Seen]:
        """Wait until every logged request has finished sending; returns the log."""
        stop = time.monotonic() + timeout
        for seen in list(self.seen):
            if not seen.done.wait(max(stop - time.monotonic(), 0)):
                raise AssertionError(f"server still busy with {seen.target}")
        return list(self.seen)

    def get_request(self) -> tuple[socket.socket, object]:
        sock, addr = super().get_request()
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that hang up early are the point of several tests

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture(scope="session")
def http_server_session() -> Iterator[LocalHTTPServer]:
    server = LocalHTTPServer()
    yield server
    server.close()


@pytest.fixture
def http_server(
    http_server_session: LocalHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> LocalHTTPServer:
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    http_server_session.reset()
    return http_server_session


@pytest.fixture
def make_http_server() -> Iterator[Callable[..., LocalHTTPServer]]:
    servers: list[LocalHTTPServer] = []

    def make(tls: tuple[str, str] | None = None) -> LocalHTTPServer:
        server = LocalHTTPServer(tls)
        servers.append(server)
        return server

    yield make
    for server in servers:
        with contextlib.suppress(Exception):
            server.close()
