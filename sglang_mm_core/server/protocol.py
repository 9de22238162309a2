"""uvicorn's httptools protocol with the guards a public port needs and uvicorn lacks.

uvicorn times out an idle keep-alive connection only after an answer, and lets a request's
head (request line and headers) grow and trickle in without bound: a client sending one byte
every few seconds, or a 200 MB header line, holds a connection (and the memory) for good.
Here the head must arrive within ``header_timeout_s`` of its first byte (or of the connection
opening) and be at most ``max_header_bytes``; else the connection gets 408 or 431 and is
closed. The body is not concerned: its upload is bounded by the request deadline.

On a graceful stop uvicorn closes every connection that has no request in progress at once.
A client that connected (or reused a keep-alive connection) just before the listener closed
then sees its request dropped without an answer. Here such a connection stays open for
``shutdown_grace_s``: a request that arrives meanwhile is answered (503, the server is
stopping) with ``connection: close``; one that does not is closed when the grace ends."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .config import DEFAULT_HEADER_TIMEOUT_S, DEFAULT_MAX_HEADER_BYTES, DEFAULT_SHUTDOWN_S

DEFAULT_SHUTDOWN_GRACE_S = 1.0


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` with a head-read timeout and a head size cap (class attributes,
    set by `guarded_protocol`)."""

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._in_head = True
        self._head_bytes = 0
        self._events = 0  # heads and messages completed: tells a chunk inside a head from one
        # that ended a head or a body (its bytes are not the next head's)
        self._head_timer: asyncio.TimerHandle | None = None
        self._stopping = False  # a graceful stop has begun: answer what arrives, then close

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, status: bytes, message: str) -> None:
        self._disarm_head_timer()
        if self.transport.is_closing():
            return
        body = message.encode()
        self.transport.write(
            b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
        )
        self.transport.close()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head:
            self._refuse(
                b"408 Request Timeout",
                f"the request line and headers did not arrive within {self.header_timeout_s:g} s",
            )

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._arm_head_timer()
        events = self._events
        super().data_received(data)
        if self._in_head and events == self._events and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse(
                    b"431 Request Header Fields Too Large",
                    f"the request line and headers are over {self.max_header_bytes} bytes",
                )

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._events += 1
        self._disarm_head_timer()
        super().on_headers_complete()
        if self._stopping and self.cycle is not None:
            self.cycle.keep_alive = False

    def shutdown(self) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        if not idle or self.transport.is_closing():
            super().shutdown()
            return
        self._stopping = True
        self.loop.call_later(self.shutdown_grace_s, self._grace_over)

    def _grace_over(self) -> None:
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request arrived: its answer closes the connection
        if self._head_bytes:
            self._refuse(b"503 Service Unavailable", "the server is stopping")
        else:
            self._disarm_head_timer()
            self.transport.close()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._events += 1
        self._in_head = True  # the next bytes start the next request's head
        self._head_bytes = 0


def guarded_protocol(
    header_timeout_s: float, max_header_bytes: int, shutdown_s: float = DEFAULT_SHUTDOWN_S
) -> type[HttpToolsProtocol]:
    """A protocol class with these limits (uvicorn takes a class for ``http``). The stop's
    grace for idle connections is at most half the stop's bound."""
    return type(
        "GuardedHttpTools",
        (GuardedHttpToolsProtocol,),
        {
            "header_timeout_s": header_timeout_s,
            "max_header_bytes": max_header_bytes,
            "shutdown_grace_s": min(DEFAULT_SHUTDOWN_GRACE_S, shutdown_s / 2),
        },
    )


__all__ = ["GuardedHttpToolsProtocol", "guarded_protocol"]
