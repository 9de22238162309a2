"""How failures become HTTP answers: one status per error class, one JSON body shape.

Every error body is ``{"error": {"type", "message", "item", "modality"}}``: ``type`` is the
error class name (``FetchError``, ``LimitError``, ``QueueFull`` ...), ``item`` the index of the
request's item concerned or null, ``modality`` which of the request's lists it indexes
(``"image"`` or ``"video"``; null without an item); an error with structured fields
(``MmError.fields``: a limit's name and values, a detected format) adds them as
``"fields"``. 4xx are the client's fault and logged at debug level; 500 means a bug (ours or
a plugin's) and is logged with its traceback."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from ..errors import LimitError, MmError, MmRequestError

log = logging.getLogger("sglang_mm.server")

RETRY_AFTER_S = 1


@dataclass(frozen=True)
class Answer:
    """One complete HTTP answer, built on any thread and sent by the ingress. ``body`` is one
    buffer or a list of buffers written back to back (no join, no copy)."""

    status: int
    body: bytes | list[memoryview | bytes]
    media_type: str
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str | None = None  # for the errors-by-type metric

    @property
    def size(self) -> int:
        if isinstance(self.body, bytes):
            return len(self.body)
        return sum(memoryview(b).nbytes for b in self.body)


def error_answer(
    status: int,
    type_: str,
    message: str,
    item: int | None = None,
    headers: dict[str, str] | None = None,
    fields: dict[str, Any] | None = None,
    modality: str | None = None,
) -> Answer:
    detail: dict[str, Any] = {"type": type_, "message": message, "item": item}
    detail["modality"] = None if item is None else (modality or "image")
    if fields:
        detail["fields"] = fields
    body = json.dumps({"error": detail}).encode()
    hdrs = dict(headers or {})
    if status == 503:
        hdrs.setdefault("Retry-After", str(RETRY_AFTER_S))
    return Answer(status, body, "application/json", hdrs, type_)


def status_for(err: BaseException) -> int:
    """400 for a bad request, 413 for a limit, 500 for everything else (a bug)."""
    if isinstance(err, LimitError):
        return 413
    if isinstance(err, MmRequestError):
        return 400
    return 500


def answer_for(err: BaseException, what: str = "request") -> Answer:
    """The answer for an exception raised while serving; 500s are logged with the traceback
    and carry no internals beyond the exception's type."""
    status = status_for(err)
    if status == 500:
        log.error("internal error while serving %s", what, exc_info=err)
        return error_answer(500, "InternalError", f"internal error ({type(err).__name__})")
    item, fields = (err.item, err.fields) if isinstance(err, MmError) else (None, None)
    modality = err.modality if isinstance(err, MmError) else None
    log.debug("rejected %s with %d: %s", what, status, err)
    return error_answer(
        status, type(err).__name__, str(err), item, fields=fields, modality=modality
    )


def queue_full() -> Answer:
    return error_answer(503, "QueueFull", "the request queue is full; retry later")


def shutting_down() -> Answer:
    return error_answer(503, "ShuttingDown", "the server is shutting down")


def not_ready() -> Answer:
    return error_answer(503, "NotReady", "the server is starting: the pipeline is not built yet")


def deadline_exceeded(deadline_s: float) -> Answer:
    return error_answer(
        503,
        "DeadlineExceeded",
        f"the request was not processed within the deadline of {deadline_s:g} s "
        "(the server is overloaded); retry later",
    )


__all__ = [
    "RETRY_AFTER_S",
    "Answer",
    "answer_for",
    "deadline_exceeded",
    "error_answer",
    "not_ready",
    "queue_full",
    "shutting_down",
    "status_for",
]
