"""Server settings and the server's secure fetch defaults.

The library's fetch defaults suit a trusted caller (files and private addresses allowed); a
network service must not read arbitrary files or reach internal hosts for whoever can post to
it. The server therefore flips two defaults, unless the spec document sets them itself:
``fetch.allow_file`` follows ``fetch.file_root`` (file sources only under a root) and
``fetch.allow_private_networks`` is false. "Sets them itself" means the key is written in the
document (pydantic's ``model_fields_set``), even if its value equals the library default.

Likewise ``threads``: the library's pool of ``min(8, cores)`` suits one caller; a server's
workers all share one pipeline, so unless the spec (a number, not null) or ``$SGLANG_MM_THREADS``
says otherwise its pool gets every server core, and each request's kernels get the worker's
share, ``threads // workers`` (`request_share`): the items of concurrent multi-image requests
spread over the whole pool, single images run on their worker, and together they fill the
cores once. The core count and the environment are read by the driver's one function
(`sglang_mm_core._threads.available_cores`, `env_threads`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._registry import Registry
from .._spec import ResolvedSpec, Spec, load_spec
from .._threads import available_cores, env_threads
from ..errors import LaunchError

log = logging.getLogger("sglang_mm.server")

SpecInput = str | bytes | Mapping[str, Any] | Path | Spec | ResolvedSpec

DEFAULT_QUEUE_SIZE = 64
DEFAULT_RING_SIZE = 1024
DEFAULT_DEADLINE_S = 60.0
DEFAULT_RING_CHUNK_IDS = 1 << 22  # 32 MiB of int64 ids per arena chunk, paged in on use
DEFAULT_MAX_JSON_BYTES = 128 * 1024 * 1024  # a ?format=json answer; safetensors has no cap
DEFAULT_MAX_INPUT_IDS = 1 << 21  # 2M token ids: ~0.3 s of parsing, far past any context
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_KEEP_ALIVE_S = 5.0
DEFAULT_SHUTDOWN_S = 10.0
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
MAX_DEFAULT_WORKERS = 4
Order = Literal["arrival", "completion"]
ORDERS: tuple[Order, ...] = ("arrival", "completion")


def default_workers(server_cores: tuple[int, ...] | None) -> int:
    """One worker per server core, at most 4: each worker's items fan out further through the
    pipeline's own pool."""
    return max(1, min(MAX_DEFAULT_WORKERS, server_threads(server_cores)))


@dataclass(frozen=True)
class ServerConfig:
    """How many workers, how much may wait, and for how long.

    ``queue_size``: accepted requests waiting for a worker; past it new ones get 503.
    ``ring_size``: processed requests parked for the host (embedded mode); when full, workers
    wait, the queue fills and new requests get 503.
    ``deadline_s``: from arrival to the end of processing (body upload included); past it the
    request is answered 503 (408 if the client had not finished sending its body).
    ``order``: the order embedded mode hands parked requests to the host: ``"arrival"`` (the
    order they were accepted in; a request still processing holds back those accepted after
    it) or ``"completion"`` (the order they finished processing in).
    ``max_json_bytes``: the largest ``?format=json`` answer; past it the answer is 413
    (JSON costs ~20 bytes and a Python object per element while encoding).
    ``max_input_ids``: the most token ids one request may carry (else 413): their parse holds
    the GIL, which the event loop shares.
    ``header_timeout_s``: a request's line and headers must arrive within it (counted from
    the connection opening or their first byte), else 408 and the connection is closed.
    ``max_header_bytes``: the most a request line plus headers may take (else 431).
    ``keep_alive_s``: an idle keep-alive connection is closed after it.
    ``shutdown_s``: how long a graceful stop waits for in-flight requests (slow uploads are
    cut off at it). Connections with no request in progress are kept for min(1 s, half of
    it), so that a request sent just before the stop gets its 503 rather than a dropped
    connection."""

    workers: int
    queue_size: int = DEFAULT_QUEUE_SIZE
    ring_size: int = DEFAULT_RING_SIZE
    deadline_s: float = DEFAULT_DEADLINE_S
    ring_chunk_ids: int = DEFAULT_RING_CHUNK_IDS
    order: Order = "arrival"
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES
    max_input_ids: int = DEFAULT_MAX_INPUT_IDS
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    keep_alive_s: float = DEFAULT_KEEP_ALIVE_S
    shutdown_s: float = DEFAULT_SHUTDOWN_S

    def validate(self) -> None:
        for name, value in (
            ("workers", self.workers),
            ("queue_size", self.queue_size),
            ("ring_size", self.ring_size),
            ("ring_chunk_ids", self.ring_chunk_ids),
            ("max_json_bytes", self.max_json_bytes),
            ("max_input_ids", self.max_input_ids),
            ("max_header_bytes", self.max_header_bytes),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise LaunchError(f"{name} must be an integer >= 1, got {value!r}")
        for name, secs in (
            ("deadline_s", self.deadline_s),
            ("header_timeout_s", self.header_timeout_s),
            ("keep_alive_s", self.keep_alive_s),
            ("shutdown_s", self.shutdown_s),
        ):
            if isinstance(secs, bool) or not isinstance(secs, (int, float)) or not secs > 0:
                raise LaunchError(f"{name} must be > 0 seconds, got {secs!r}")
        if self.order not in ORDERS:
            raise LaunchError(f"order must be 'arrival' or 'completion', got {self.order!r}")


def _server_policy(spec: Spec, fetch_set: set[str], top_set: set[str], threads: int | None) -> Spec:
    """``spec`` with the server's defaults for the fields its document left out."""
    fetch = spec.fetch
    update: dict[str, Any] = {}
    if "allow_private_networks" not in fetch_set:
        update["allow_private_networks"] = False
    if "allow_file" not in fetch_set:
        update["allow_file"] = fetch.file_root is not None
    elif fetch.allow_file and fetch.file_root is None:
        log.warning(
            "fetch.allow_file is true without fetch.file_root: clients may read any file "
            "this server can read"
        )
    top: dict[str, Any] = {"fetch": fetch.model_copy(update=update)}
    # ``threads: null`` is the library's "decide for me", so it counts as unset here.
    unset = "threads" not in top_set or spec.threads is None
    if unset and threads is not None and env_threads() is None:
        top["threads"] = threads
    return spec.model_copy(update=top)


def server_spec(
    spec: SpecInput, *, registry: Registry | None = None, threads: int | None = None
) -> ResolvedSpec:
    """Validate ``spec`` and apply the server's defaults to the fields it leaves out: the
    secure fetch policy, and ``threads`` (the shared pipeline's pool) when given and neither
    the spec nor ``$SGLANG_MM_THREADS`` sets it. A `Spec`/`ResolvedSpec` object counts the fields
    it was built with as set."""
    if isinstance(spec, Spec):
        fields = (set(spec.fetch.model_fields_set), set(spec.model_fields_set))
        return load_spec(_server_policy(spec, *fields, threads), registry=registry)
    if not isinstance(spec, ResolvedSpec):
        spec = load_spec(spec, registry=registry)
    s = spec.spec
    policy = _server_policy(s, set(s.fetch.model_fields_set), set(s.model_fields_set), threads)
    return ResolvedSpec(policy, spec.family, spec.params)


def server_threads(server_cores: tuple[int, ...] | None) -> int:
    """The server pipeline's pool when the spec and ``$SGLANG_MM_THREADS`` leave it: one thread
    per core the workers run on (their pinned set, else every core this process may use)."""
    return len(server_cores) if server_cores is not None else available_cores()


def request_share(threads: int, workers: int) -> int:
    """Kernel threads of one request: the pool split evenly between the workers."""
    return max(1, threads // max(1, workers))


def thread_share(workers: int, server_cores: tuple[int, ...] | None) -> int:
    """Kernel threads per worker when the pool is `server_threads` (kept for callers of the
    earlier API; the engine uses `request_share` of the pipeline's actual pool)."""
    return request_share(server_threads(server_cores), workers)


__all__ = [
    "ORDERS",
    "Order",
    "ServerConfig",
    "SpecInput",
    "default_workers",
    "request_share",
    "server_spec",
    "server_threads",
    "thread_share",
]
