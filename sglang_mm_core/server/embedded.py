"""Embedded mode: the ingress and the workers run as threads of a host process (an engine's
scheduler), which polls for processed requests and answers them itself.

    launch, server = partition_cores()
    srv = MmServer.launch(spec, "127.0.0.1:8100", cores=(launch, server))
    while running:
        if srv.wait_ingress(timeout_ms=5):
            batch = srv.drain(256)
            ... schedule batch.data / batch.lengths / batch.items ...
            srv.push_result(rid, body, "application/json")   # once per rid
    srv.shutdown(timeout_s=10)

Parked requests are handed over in the order they were accepted (``order="arrival"``, the
default): a request still processing (a slow URL) holds back the finished ones accepted after
it, while one that failed, timed out or lost its client is skipped. ``order="completion"``
hands them over as they finish instead, so a slow request never stalls the host; a host that
schedules out of order anyway may prefer it.

``compact=True`` parks each item's feature in the compact form (`CompactTensor`: uint8 codes
plus per-channel tables, 4-8x smaller) for a family that offers it; the host expands it where
the feature is used (``feature.torch(device)``: one gather on the GPU), bit-identical to the
full feature."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .._registry import Registry
from ..errors import LaunchError
from .app import create_app, families_of
from .config import (
    DEFAULT_DEADLINE_S,
    DEFAULT_QUEUE_SIZE,
    DEFAULT_RING_CHUNK_IDS,
    DEFAULT_RING_SIZE,
    Order,
    ServerConfig,
    SpecInput,
    default_workers,
    server_spec,
    server_threads,
)
from .cores import partition_cores, pin_current_thread
from .engine import Engine, Ticket
from .errors import Answer, error_answer
from .ingress import bind, check_cores, parse_addr, uvicorn_server
from .ring import IngressBatch

log = logging.getLogger("sglang_mm.server")

Cores = tuple[int, ...]
CoresArg = tuple[Cores | None, Cores | None] | str | None

STARTUP_TIMEOUT_S = 30.0
_EXTRA_SETTINGS = {
    "max_json_bytes",
    "max_input_ids",
    "header_timeout_s",
    "max_header_bytes",
    "keep_alive_s",
    "shutdown_s",
}


class _HostEngine(Engine):
    """The engine of embedded mode: what ``/v1/submit`` parks follows the host's ``compact``
    choice (the standalone endpoints keep their own ``?compact=`` query)."""

    park_compact = False

    def submit(self, ticket: Ticket) -> Answer | None:
        if ticket.kind == "submit":
            ticket.compact = self.park_compact
        return super().submit(ticket)


class MmServer:
    """A running embedded server; build it with `MmServer.launch`."""

    host: str
    port: int
    engine: Engine
    launch_cores: Cores | None
    server_cores: Cores | None

    def __init__(self) -> None:  # use launch()
        raise TypeError("use MmServer.launch(spec, http_addr, cores=None)")

    @classmethod
    def launch(
        cls,
        spec: SpecInput,
        http_addr: str | tuple[str, int],
        cores: CoresArg = None,
        *,
        workers: int | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        ring_size: int = DEFAULT_RING_SIZE,
        deadline_s: float = DEFAULT_DEADLINE_S,
        ring_chunk_ids: int = DEFAULT_RING_CHUNK_IDS,
        order: Order = "arrival",
        registry: Registry | None = None,
        log_level: str = "warning",
        compact: bool = False,
        **settings: Any,
    ) -> MmServer:
        """Start the workers and the ingress; returns once the port is bound and serving.

        ``cores``: None runs everything unpinned; ``(launch_cores, server_cores)`` as
        `partition_cores` returns them pins the workers and the ingress to ``server_cores``
        and then narrows the calling thread to ``launch_cores``; ``"auto"`` is
        ``partition_cores()``. ``order``: ``"arrival"`` hands parked requests to the host in
        the order they were accepted, ``"completion"`` in the order they finished processing.
        ``compact``: park features in the compact form (the family must offer it).
        ``settings``: the other `ServerConfig` fields (``max_json_bytes``,
        ``header_timeout_s``, ``max_header_bytes``, ``keep_alive_s``, ``shutdown_s``).
        A setting that cannot be honoured raises `LaunchError` naming it; a bad spec raises
        `SpecError`."""
        unknown = sorted(set(settings) - _EXTRA_SETTINGS)
        if unknown:
            raise LaunchError(f"unknown setting(s) {unknown}")
        if isinstance(cores, str):
            if cores != "auto":
                raise LaunchError(f"cores must be None, 'auto' or a pair of core sets: {cores!r}")
            launch_cores, server_cores = partition_cores()
        elif cores is None:
            launch_cores, server_cores = None, None
        else:
            try:
                launch_raw, server_raw = cores
            except (TypeError, ValueError):
                raise LaunchError(
                    f"cores must be (launch_cores, server_cores) as partition_cores() returns, "
                    f"got {cores!r}"
                ) from None
            launch_cores, server_cores = check_cores(
                None if launch_raw is None else tuple(launch_raw),
                None if server_raw is None else tuple(server_raw),
                "cores",
            )
        config = ServerConfig(
            workers=default_workers(server_cores) if workers is None else workers,
            queue_size=queue_size,
            ring_size=ring_size,
            deadline_s=deadline_s,
            ring_chunk_ids=ring_chunk_ids,
            order=order,
            **settings,
        )
        config.validate()
        resolved = server_spec(spec, registry=registry, threads=server_threads(server_cores))
        if not isinstance(compact, bool):
            raise LaunchError(f"compact must be True or False, got {compact!r}")
        if compact and not resolved.family(resolved.params).offers_compact:
            raise LaunchError(
                f"compact=True: family {resolved.family.name!r} does not offer the compact form"
            )
        host, port = parse_addr(http_addr)
        sock = bind(host, port)
        self = object.__new__(cls)
        try:
            self._start(resolved, config, sock, server_cores, registry, log_level, compact)
        except BaseException:
            sock.close()
            raise
        pin_current_thread(launch_cores, "the host's launch thread")
        self.launch_cores = launch_cores
        return self

    def _start(
        self,
        resolved: Any,
        config: ServerConfig,
        sock: Any,
        server_cores: Cores | None,
        registry: Registry | None,
        log_level: str,
        compact: bool = False,
    ) -> None:
        self.host, self.port = sock.getsockname()[:2]
        self.server_cores = server_cores
        self.engine = _HostEngine(resolved, config, server_cores=server_cores)
        self.engine.park_compact = compact
        self.engine.build()
        app = create_app(self.engine, families_of(registry), embedded=True)
        self._server = uvicorn_server(app, log_level=log_level, settings=config)
        self._sock = sock
        self._shutdown_lock = threading.Lock()
        self._closed = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="sglang-mm-ingress", daemon=True)
        self._thread.start()
        end = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > end:
                self.engine.stop_accepting()
                self.engine.join_workers(1.0)
                self.engine.close()
                raise LaunchError(
                    f"http_addr {self.host}:{self.port}: the ingress did not start"
                    + (f" ({self._error})" if self._error else "")
                )
            time.sleep(0.002)

    def _serve(self) -> None:
        pin_current_thread(self.server_cores, "the ingress")
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as e:  # surfaced by launch() or logged
            self._error = e
            log.exception("the ingress stopped with an error")

    # -- properties --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def workers(self) -> int:
        return self.engine.config.workers

    # -- the host's loop ---------------------------------------------------------------------
    def wait_ingress(self, timeout_ms: float) -> bool:
        """Block (GIL released) until a request is drainable or ``timeout_ms`` passes; True if
        something is ready to drain. In arrival order a parked request held back by an earlier
        one still processing does not count."""
        return self.engine.wait_ingress(timeout_ms)

    def drain(self, max_n: int) -> IngressBatch:
        """Take up to ``max_n`` drainable requests without blocking (possibly none), in the
        launch's ``order``."""
        return self.engine.drain(max_n)

    def push_result(
        self, rid: str, body: bytes, content_type: str = "application/octet-stream"
    ) -> bool:
        """Complete ``rid``'s HTTP response with ``200`` and ``body``. Raises `RidError` for an
        unknown or already answered rid; returns False if the client had left."""
        if not isinstance(body, (bytes, bytearray, memoryview)):
            raise TypeError(f"body must be bytes, got {type(body).__name__}")
        if not (content_type.isascii() and content_type.isprintable() and content_type):
            raise ValueError(f"content_type must be printable ASCII, got {content_type!r}")
        data = bytes(body) if not isinstance(body, bytes) else body
        return self.engine.push_answer(rid, Answer(200, data, content_type), "push_result")

    def push_error(self, rid: str, status: int, message: str) -> bool:
        """Reject ``rid`` with ``status`` (400-599) and an error body naming ``message``."""
        if not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(f"status must be an HTTP error status 400-599, got {status!r}")
        answer = error_answer(status, "HostError", str(message))
        return self.engine.push_answer(rid, answer, "push_error")

    # -- shutdown ----------------------------------------------------------------------------
    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop accepting, answer everything queued or parked with 503, wait for the workers,
        answer whatever is left with 503, then stop the ingress. Idempotent."""
        with self._shutdown_lock:
            if self._closed:
                return
            self._closed = True
        end = time.monotonic() + max(0.0, timeout_s)
        self.engine.stop_accepting()
        if not self.engine.join_workers(max(0.0, end - time.monotonic())):
            log.warning("shutdown: a worker is still busy after %.3g s", timeout_s)
        self.engine.answer_all_pending()
        self._server.config.timeout_graceful_shutdown = max(1, int(end - time.monotonic() + 1))
        self._server.should_exit = True
        self._thread.join(max(1.0, end - time.monotonic() + 1.0))
        self.engine.close()
        self._sock.close()

    def __enter__(self) -> MmServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"MmServer({self.url}, family={self.engine.family!r}, workers={self.workers})"


__all__ = ["MmServer"]
