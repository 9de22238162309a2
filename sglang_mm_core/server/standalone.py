"""The standalone service behind ``sglang-mm serve``: uvicorn in the main thread, the pipeline
built in the background (``/health`` says 503 until it is), workers pinned on request.

On SIGINT/SIGTERM the server stops accepting (new and queued requests get 503), lets running
requests finish and their answers go out, then stops. What is still in progress when
``shutdown_s`` has passed (a slow upload, a request still processing) is cut off: its client
gets 503 and the log one warning naming it (``shutdown: an upload in progress (4 bytes of
1000 read) was cut off``), not uvicorn's error line and a traceback per request.

While it serves, the interpreter's GIL switch interval is `_SWITCH_INTERVAL_S` (Python's
default is 5 ms). The workers' kernels run without the GIL, and each one's return waits for
it; the event loop holds it while it parses bodies and writes answers (a 6 MB write to a
socket is one call). With 5 ms turns, workers sat waiting behind the loop: 1080p compact
throughput went from about 58 to 64 images/s with 0.5 ms.

With glibc, freed memory is also kept for reuse (`_retain_freed_memory`): every image
allocates buffers of megabytes (decoded pixels, codes or features), which glibc otherwise
hands back to the kernel and takes again, so each page is faulted and zeroed anew: 13% of the
server's CPU on 1080p compact answers."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import sys
import threading
from types import FrameType
from typing import Any

import uvicorn

from .._registry import Registry
from ..errors import LaunchError
from .app import create_app, families_of
from .config import (
    DEFAULT_DEADLINE_S,
    DEFAULT_QUEUE_SIZE,
    ServerConfig,
    SpecInput,
    default_workers,
    server_spec,
    server_threads,
)
from .cores import allowed_cores, partition_cores, pin_current_thread
from .engine import Engine
from .ingress import bind, uvicorn_server

log = logging.getLogger("sglang_mm.server")

#: The GIL switch interval while `serve` runs (restored when it returns).
_SWITCH_INTERVAL_S = 0.0005
#: Allocations below this come from malloc's heap, not a mapping of their own (glibc's own
#: adaptive limit stops at 32 MiB; a full 1080p Qwen answer is 50 MiB).
_MMAP_THRESHOLD_BYTES = 64 << 20
#: Free memory above this at the top of a heap goes back to the kernel.
_TRIM_THRESHOLD_BYTES = 256 << 20


def _retain_freed_memory() -> bool:
    """Have glibc keep freed memory for the next request's buffers (see the module docs);
    True if it took the settings. The process's RSS stays near its peak, at most
    `_TRIM_THRESHOLD_BYTES` above what it uses, instead of following each request."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(
        mallopt(m_mmap_threshold, _MMAP_THRESHOLD_BYTES)
        and mallopt(m_trim_threshold, _TRIM_THRESHOLD_BYTES)
    )


#: How a request task is cancelled when the stop's bound passes.
_CUT_OFF = "the server's shutdown bound passed"
#: uvicorn's own cancellation of what is left runs this long after ours, as a backstop.
_BACKSTOP_S = 1


class _CutOffLog(logging.Filter):
    """Turns uvicorn's record of a request task cancelled by the stop into one warning line.
    The app's handler catches the cancellation where it can name what was cut off (an upload,
    a parse, a request waiting for its answer); a cancellation elsewhere (an answer being
    written to a client that is not reading it) reaches uvicorn, which would log it as an
    error with the traceback of a `CancelledError`."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, asyncio.CancelledError) and not self.engine.accepting:
            record.msg = "shutdown: a request in progress (its answer being sent) was cut off"
            record.args = ()
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class _Server(uvicorn.Server):
    """uvicorn, plus the engine's part of a graceful stop."""

    engine: Engine

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A signal handler must not take the engine lock (the interrupted code may hold it).
        threading.Thread(target=self.engine.stop_accepting, daemon=True).start()
        super().handle_exit(sig, frame)
        # uvicorn re-raises the signal once stopped, so the process would end "killed by
        # SIGTERM"; a graceful stop is a normal exit (status 0).
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()

    async def shutdown(self, sockets: Any = None) -> None:
        bound = asyncio.get_running_loop().call_later(self.engine.config.shutdown_s, self._cut_off)
        await asyncio.to_thread(self.engine.stop_accepting)
        try:
            await super().shutdown(sockets)
        finally:
            bound.cancel()
        await asyncio.to_thread(self.engine.join_workers, self.engine.config.shutdown_s)
        self.engine.answer_all_pending()

    def _cut_off(self) -> None:
        """The stop's bound passed: cancel the requests still in progress. Each one's handler
        logs what was cut off and answers 503 (uvicorn's own cancellation, `_BACKSTOP_S`
        later, would log an error line and a traceback per request)."""
        for task in list(self.server_state.tasks):
            task.cancel(msg=_CUT_OFF)


def serve(
    spec: SpecInput,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int | None = None,
    pin_cores: bool = False,
    queue_size: int = DEFAULT_QUEUE_SIZE,
    deadline_s: float = DEFAULT_DEADLINE_S,
    log_level: str = "info",
    registry: Registry | None = None,
    **settings: Any,
) -> int:
    """Serve until interrupted; returns the exit status. Settings that cannot be honoured
    raise `LaunchError` naming the option; a bad spec raises `SpecError`. ``settings``: the
    other `ServerConfig` fields (``max_json_bytes``, ``header_timeout_s``, ...)."""
    launch_cores: tuple[int, ...] | None = None
    server_cores: tuple[int, ...] | None = None
    if pin_cores:
        launch_cores, server_cores = partition_cores()
        if server_cores is None:
            have = allowed_cores()
            what = "no CPU affinity API" if have is None else f"{len(have)} allowed core(s)"
            raise LaunchError(
                f"--pin-cores: partitioning needs an affinity API and at least 4 allowed "
                f"cores; this process has {what}"
            )
    config = ServerConfig(
        workers=default_workers(server_cores) if workers is None else workers,
        queue_size=queue_size,
        deadline_s=deadline_s,
        **settings,
    )
    try:
        config.validate()
    except LaunchError as e:
        name, _, rest = e.message.partition(" ")
        raise LaunchError(f"--{name.replace('_', '-')} {rest}") from None
    resolved = server_spec(spec, registry=registry, threads=server_threads(server_cores))
    sock = bind(host, port, "--host/--port")
    engine = Engine(resolved, config, server_cores=server_cores)
    app = create_app(engine, families_of(registry))
    server = uvicorn_server(app, log_level=log_level, settings=config, cls=_Server)
    assert isinstance(server, _Server)
    server.engine = engine
    server.config.timeout_graceful_shutdown = int(config.shutdown_s + 0.999) + _BACKSTOP_S
    cut_off_log = _CutOffLog(engine)
    uvicorn_log = logging.getLogger("uvicorn.error")
    ingress_tid = threading.get_native_id()

    def build() -> None:
        try:
            engine.build()
        except BaseException as e:
            log.error("cannot build the pipeline: %s: %s", type(e).__name__, e)
            server.should_exit = True
            return
        pin_current_thread(launch_cores, "the ingress", tid=ingress_tid)
        f = resolved.spec.fetch
        log.info(
            "serving family %s (spec %s) on http://%s:%d with %d worker(s) sharing %s thread(s)%s; "
            "fetch: allow_file=%s file_root=%s allow_private_networks=%s",
            engine.family,
            engine.fingerprint[:12],
            host,
            sock.getsockname()[1],
            config.workers,
            engine.pipeline.threads if engine.pipeline else "?",
            f", workers on cores {list(server_cores)}" if server_cores else "",
            f.allow_file,
            f.file_root,
            f.allow_private_networks,
        )

    builder = threading.Thread(target=build, name="sglang-mm-build", daemon=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(_SWITCH_INTERVAL_S)
    _retain_freed_memory()
    builder.start()
    uvicorn_log.addFilter(cut_off_log)
    try:
        server.run(sockets=[sock])
    finally:
        uvicorn_log.removeFilter(cut_off_log)
        builder.join()
        engine.close()
        sock.close()
        sys.setswitchinterval(switch)
    if engine.failed is not None:
        raise engine.failed
    return 0


__all__ = ["serve"]
