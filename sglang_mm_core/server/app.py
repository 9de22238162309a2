"""The HTTP ingress (FastAPI on uvicorn): endpoints, body cap, deadline, disconnects, metrics.

Handlers never run pipeline code: they read and validate the body, hand a `Ticket` to the
engine and await its answer, watching for the client leaving and the deadline passing. The
body is read by hand (not by FastAPI's body parameter) so the cap is enforced while reading and
a malformed body gets the server's own 422 shape; the schema is still published in OpenAPI."""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .. import _native
from .._carriers import MmInput
from .._video_items import VideoOptions
from .engine import Engine, Format, Kind, Ticket
from .errors import Answer, answer_for, error_answer, not_ready, shutting_down
from .schema import (
    ErrorBody,
    FamiliesAnswer,
    FamilyEntry,
    HealthAnswer,
    PreprocessRequest,
    TokensAnswer,
)

log = logging.getLogger("sglang_mm.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CLIENT_CLOSED = 499  # nginx's convention; the answer is never delivered, only counted

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad request content (fetch, decode, layout)."},
    408: {"model": ErrorBody, "description": "The body did not arrive within the deadline."},
    413: {"model": ErrorBody, "description": "Over a limit (limits.*, the body cap)."},
    422: {"model": ErrorBody, "description": "Malformed JSON, or not the request schema."},
    503: {
        "model": ErrorBody,
        "description": "Queue full, deadline passed, starting or shutting down (with Retry-After).",
    },
}


class BufferResponse(Response):
    """An `Answer` sent as is: its buffers written one after another, never joined."""

    def __init__(self, answer: Answer) -> None:
        chunks = [answer.body] if isinstance(answer.body, bytes) else answer.body
        headers = {**answer.headers, "content-length": str(answer.size)}
        super().__init__(None, answer.status, headers, answer.media_type)
        self._chunks = chunks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        for chunk in self._chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _TooLarge(Exception):
    pass


def _respond(engine: Engine, answer: Answer) -> Response:
    if answer.error_type is not None:
        engine.metrics.errors.labels(answer.error_type).inc()
    return BufferResponse(answer)


MAX_ERRORS_LISTED = 3
MAX_ERROR_PART = 300  # characters of one listed error
OFF_LOOP_BYTES = 64 * 1024  # bodies larger than this are parsed on a worker thread


def _clip(text: str, n: int = MAX_ERROR_PART) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _shown_loc(loc: Any) -> list[Any]:
    """An error's location without FastAPI's ``body`` and a video's union tag."""
    parts = list(loc)
    return [
        p
        for i, p in enumerate(parts)
        if p != "body" and not (p in ("source", "element") and i and isinstance(parts[i - 1], int))
    ]


def _validation_message(err: ValidationError | RequestValidationError) -> str:
    """The first few errors and how many there are: bounded whatever the body."""
    if isinstance(err, ValidationError):
        count = err.error_count()
        errors = err.errors(include_url=False, include_input=False) if count else []
    else:
        errors = list(err.errors())
        count = len(errors)
    parts = []
    for e in errors[:MAX_ERRORS_LISTED]:
        loc = ".".join(str(p) for p in _shown_loc(e.get("loc", ())))
        parts.append(_clip(f"{loc or '(body)'}: {e.get('msg', 'invalid')}"))
    if count > MAX_ERRORS_LISTED:
        parts.append(f"and {count - MAX_ERRORS_LISTED} more error(s)")
    return "; ".join(parts) or "invalid request"


# A \uXXXX escape of a UTF-16 surrogate, and whether a low one follows it.
_SURROGATE = re.compile(
    rb"\\u([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _lone_surrogate(body: bytes) -> str | None:
    """The message for the first escape of an unpaired UTF-16 surrogate in ``body``, if any:
    the JSON parser's own words for it ("unexpected end of hex escape") name no fault a
    client can see. An escaped backslash before ``u`` is not told apart (a rare miss that
    leaves the parser's message)."""
    for m in _SURROGATE.finditer(body):
        if m.group(1) is not None and m.group(2) is not None:
            continue  # a proper pair
        where = _clip(body[max(0, m.start() - 20) : m.end() + 20].decode("utf-8", "replace"), 60)
        return (
            f"(body): the escape {m.group(0).decode()} at byte {m.start()} is a lone UTF-16 "
            f"surrogate, which is no character (JSON strings must be Unicode text): {where!r}"
        )
    return None


def _parse(body: bytes) -> PreprocessRequest | str:
    """The request, or the message of its validation error (built on the same thread)."""
    try:
        return PreprocessRequest.model_validate_json(body)
    except ValidationError as e:
        errors = e.errors()
        if errors and errors[0].get("type") == "json_invalid" and b"\\u" in body:
            lone = _lone_surrogate(body)
            if lone is not None:
                return lone
        return _validation_message(e)


# Many token ids are parsed natively (with the GIL released) rather than by pydantic: its parse
# and the schema's checks of a list of two million ids are single calls holding the GIL for
# 0.3 s and more.
MIN_NATIVE_IDS = 1 << 16


def _parse_sliced(body: bytes) -> PreprocessRequest | str | None:
    """`_parse` of a body with many token ids: the array of the top-level object's last
    ``"input_ids"`` member (the one a parser keeps if the key is repeated) parsed natively,
    and the rest of the body by pydantic with that array replaced by a random sentinel id. If
    the parsed request's ids are that sentinel, the replaced text was the value of the
    request's ``input_ids``, so the two parses are the body's. None when this does not apply
    (no such array, a number the native parse refuses, a malformed rest): the caller parses
    the whole body, for its exact error message."""
    got = _native.json_ids(body)
    if got is None:
        return None
    ids, start, end = got
    sentinel = (1 << 62) | secrets.randbits(62)
    small = body[:start] + b"[%d]" % sentinel + body[end:]
    try:
        doc = PreprocessRequest.model_validate_json(small)
    except ValidationError as e:
        errors = e.errors()
        if errors and errors[0].get("type") == "json_invalid":
            return None  # its message would point into the shortened body
        return _validation_message(e)
    if doc.input_ids != [sentinel]:
        return None
    return doc.model_copy(update={"input_ids": ids})


# A request body is one object of a few fields holding flat arrays: token ids, a bounded
# number of sources. Past these its parse would only build Python objects to refuse them.
# A video given with its options is one more level of objects and a dozen members at most.
MAX_BODY_MEMBERS = 64
MAX_BODY_DEPTH = 3
MIN_BODY_OTHER_VALUES = 4096
VIDEO_MEMBERS = 1 + len(VideoOptions.model_fields)


def _parse_big(body: bytes, max_ids: int, max_sources: int) -> PreprocessRequest | str | Answer:
    """`_parse` for a big body, after measuring its shape with the GIL released: a parser
    holds the GIL while it builds objects (a million keys take seconds), and the event loop
    needs it. A body no request can be is refused from its shape alone."""
    members, depth, ids, others, first = _native.json_shape(body)
    if members > MAX_BODY_MEMBERS + VIDEO_MEMBERS * max_sources:
        return (
            f"(body): {members} object members; a request is one object with the fields "
            "input_ids, images, videos and rid (a video's options add a few)"
        )
    if depth > MAX_BODY_DEPTH:
        return (
            f"(body): JSON nested {depth} levels deep; a request holds flat arrays (and a "
            "video's options, one level further)"
        )
    limit = max(MIN_BODY_OTHER_VALUES, 2 * max_sources)
    if others > limit:
        first = first or 0  # set whenever others > 0
        where = _clip(body[first : first + 40].decode("utf-8", "replace"), 40)
        return (
            f"(body): {others} array elements are not token ids (non-negative integers), more "
            f"than a request's image sources can be (the first at byte {first}: {where!r})"
        )
    if ids > max_ids:
        return error_answer(
            413,
            "LimitError",
            f"request has {ids} token ids, over the server's max_input_ids = {max_ids}",
            fields={"limit": "max_input_ids", "limit_value": max_ids, "value": ids},
        )
    if ids >= MIN_NATIVE_IDS:
        sliced = _parse_sliced(body)
        if sliced is not None:
            return sliced
    return _parse(body)


class _Upload:
    """How much of a request body has arrived (named if the upload is cut off)."""

    __slots__ = ("declared", "read")

    def __init__(self, declared: str | None) -> None:
        self.declared = int(declared) if declared is not None and declared.isdigit() else None
        self.read = 0

    def __str__(self) -> str:
        of = f"of {self.declared}" if self.declared is not None else "of an undeclared length"
        return f"{self.read} byte{'' if self.read == 1 else 's'} {of} read"


async def _read_body(request: Request, cap: int, upload: _Upload) -> bytes:
    if upload.declared is not None and upload.declared > cap:
        raise _TooLarge(upload.declared)
    chunks: list[bytes] = []
    async for chunk in request.stream():
        upload.read += len(chunk)
        if upload.read > cap:
            raise _TooLarge(upload.read)
        chunks.append(chunk)
    return b"".join(chunks)


def _cut_off(engine: Engine, what: str) -> Response:
    """The request's task was cancelled by the server's stop (its ``shutdown_s`` bound
    passed): an expected end, so one line in the log and a 503 to the client, and the
    cancellation is done with here instead of surfacing as a traceback."""
    task = asyncio.current_task()
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    if uncancel is not None:
        uncancel()
    log.warning("shutdown: %s was cut off", what)
    answer = error_answer(
        503,
        "ShuttingDown",
        f"the server is shutting down: {what} was cut off",
        headers={"Connection": "close"},
    )
    return _respond(engine, answer)


async def _disconnected(receive: Receive) -> None:
    """Returns when the client closes the connection (the body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _await_answer(engine: Engine, ticket: Ticket, request: Request) -> Answer | None:
    """The ticket's answer; None if the client left first. Past the deadline the engine
    answers 503 unless processing is over (then the host answers, with no deadline)."""
    watcher = asyncio.ensure_future(_disconnected(request.receive))
    bounded = True
    try:
        while True:
            timeout = max(0.0, ticket.deadline - time.monotonic()) if bounded else None
            waiting: set[asyncio.Future[Any]] = {ticket.future, watcher}
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if ticket.future.done():
                return ticket.future.result()
            if watcher.done():
                engine.forget(ticket)
                return None
            if not engine.expire(ticket):
                bounded = False
    finally:
        watcher.cancel()


async def _serve(
    engine: Engine, request: Request, kind: Kind, fmt: Format, compact: bool = False
) -> Response:
    if not engine.ready:
        return _respond(engine, shutting_down() if engine.pipeline else not_ready())
    deadline = time.monotonic() + engine.config.deadline_s
    cap = engine.spec.spec.limits.max_body_bytes
    upload = _Upload(request.headers.get("content-length"))
    try:
        body = await asyncio.wait_for(_read_body(request, cap, upload), engine.config.deadline_s)
    except asyncio.CancelledError:
        if engine.accepting:  # not the server's stop: nothing of ours to say about it
            raise
        return _cut_off(engine, f"an upload in progress ({upload})")
    except _TooLarge as e:
        return _respond(
            engine,
            error_answer(
                413,
                "LimitError",
                f"request body of {e.args[0]} bytes or more is over limits.max_body_bytes = {cap}",
                headers={"Connection": "close"},
            ),
        )
    except asyncio.TimeoutError:
        return _respond(
            engine,
            error_answer(
                408,
                "RequestTimeout",
                f"the request body did not arrive within the deadline of "
                f"{engine.config.deadline_s:g} s",
                headers={"Connection": "close"},
            ),
        )
    except ClientDisconnect:
        engine.metrics.disconnects.inc()
        return Response(status_code=CLIENT_CLOSED)
    # A big body is measured (GIL released) and parsed off the loop thread; a small one
    # parses in microseconds.
    if len(body) <= OFF_LOOP_BYTES:
        doc: PreprocessRequest | str | Answer = _parse(body)
    else:
        max_sources = engine.spec.spec.limits.max_items
        parse = asyncio.to_thread(_parse_big, body, engine.config.max_input_ids, max_sources)
        try:
            doc = await parse
        except asyncio.CancelledError:
            if engine.accepting:
                raise
            return _cut_off(engine, f"a request being parsed ({len(body)} bytes)")
    if isinstance(doc, Answer):
        return _respond(engine, doc)
    if isinstance(doc, str):
        return _respond(engine, error_answer(422, "ValidationError", doc))
    rid = doc.rid if doc.rid is not None or kind != "submit" else engine.new_rid()
    req = MmInput(input_ids=doc.input_ids, images=doc.images, rid=rid, videos=doc.video_sources())
    ticket = Ticket(kind, req, rid or "", fmt, asyncio.get_running_loop(), deadline)
    ticket.compact = compact
    refused = engine.submit(ticket)
    if refused is not None:
        return _respond(engine, refused)
    try:
        answer = await _await_answer(engine, ticket, request)
    except asyncio.CancelledError:
        if engine.accepting:
            raise
        if not ticket.future.done() or ticket.future.cancelled():
            what = f"a request in progress (rid {rid or '-'}, {ticket.state.value})"
            return _cut_off(engine, what)
        answer = ticket.future.result()
    if answer is None:
        return Response(status_code=CLIENT_CLOSED)
    return _respond(engine, answer)


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema with its ``$defs`` written in place: an operation's ``openapi_extra`` is
    copied into the document as is, where ``#/$defs/...`` would point at nothing."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    return out


def _request_body_doc() -> dict[str, Any]:
    schema = _inlined(PreprocessRequest.model_json_schema())
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": schema}},
        }
    }


class MetricsMiddleware:
    """Counts every HTTP answer by endpoint and status and times it."""

    def __init__(self, app: Any, engine: Engine, endpoints: set[str]) -> None:
        self.app = app
        self.engine = engine
        self.endpoints = endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            path = scope.get("path", "")
            endpoint = path if path in self.endpoints else "other"
            m = self.engine.metrics
            m.requests.labels(endpoint, str(status[0])).inc()
            m.latency.labels(endpoint).observe(time.perf_counter() - start)


#: The ``Accept`` form of ``?compact=1``.
COMPACT_MEDIA_TYPE = "application/vnd.sglang-mm.compact+safetensors"


def create_app(engine: Engine, families: list[FamilyEntry], *, embedded: bool = False) -> FastAPI:
    """The ASGI app of one engine; ``embedded`` adds ``POST /v1/submit``."""
    from .. import __version__

    app = FastAPI(
        title="sglang-mm preprocessing server",
        version=__version__,
        description="Multimodal preprocessing (fetch, decode, resize, normalise, layout, "
        "positions) as a service. Answers are safetensors by default.",
        docs_url=None,
        redoc_url=None,
    )

    @app.exception_handler(RequestValidationError)
    async def _on_validation(request: Request, exc: RequestValidationError) -> Response:
        return _respond(engine, error_answer(422, "ValidationError", _validation_message(exc)))

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(request: Request, exc: StarletteHTTPException) -> Response:
        names = {404: "NotFound", 405: "MethodNotAllowed"}
        kind = names.get(exc.status_code, "HTTPError")
        return _respond(
            engine,
            error_answer(exc.status_code, kind, str(exc.detail), headers=dict(exc.headers or {})),
        )

    @app.exception_handler(Exception)
    async def _on_bug(request: Request, exc: Exception) -> Response:
        return _respond(engine, answer_for(exc, f"{request.method} {request.url.path}"))

    @app.post(
        "/v1/preprocess",
        summary="Preprocess one request",
        description="Answers the whole result: safetensors by default (header "
        "`X-Format: safetensors`), or JSON with `?format=json`.",
        responses={
            200: {
                "description": "The model-ready result.",
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                    "application/json": {"schema": {"type": "object"}},
                },
            },
            **_ERRORS,
        },
        response_class=Response,
        openapi_extra=_request_body_doc(),
    )
    async def preprocess(
        request: Request,
        format: Literal["safetensors", "json"] = Query(
            "safetensors", description="Body format of the answer."
        ),
        compact: bool = Query(
            False,
            description="Features in the compact form (uint8 codes plus tables); also asked "
            "for with `Accept: " + COMPACT_MEDIA_TYPE + "`.",
        ),
    ) -> Response:
        wants = compact or COMPACT_MEDIA_TYPE in request.headers.get("accept", "")
        return await _serve(engine, request, "preprocess", format, wants)

    @app.post(
        "/v1/tokens",
        summary="Count tokens from image headers (no pixel decode)",
        response_model=TokensAnswer,
        responses=_ERRORS,
        openapi_extra=_request_body_doc(),
    )
    async def tokens(request: Request) -> Response:
        return await _serve(engine, request, "tokens", "json")

    if embedded:

        @app.post(
            "/v1/submit",
            summary="Submit a request to the host process (embedded mode)",
            description="Processed by a worker, parked for the host, answered by the host.",
            responses={
                200: {"description": "The host's answer (its own body and content type)."},
                409: {"model": ErrorBody, "description": "The rid is already in flight."},
                **_ERRORS,
            },
            response_class=Response,
            openapi_extra=_request_body_doc(),
        )
        async def submit(request: Request) -> Response:
            return await _serve(engine, request, "submit", "safetensors")

    @app.get("/v1/families", response_model=FamiliesAnswer)
    async def list_families() -> FamiliesAnswer:
        return FamiliesAnswer(
            serving=engine.family, spec_fingerprint=engine.fingerprint, installed=families
        )

    @app.get(
        "/health",
        response_model=HealthAnswer,
        responses={503: {"model": ErrorBody, "description": "Starting or shutting down."}},
    )
    async def health() -> Response:
        if not engine.ready:
            return _respond(engine, shutting_down() if engine.pipeline else not_ready())
        body = HealthAnswer(
            status="ok",
            family=engine.family,
            spec_fingerprint=engine.fingerprint,
            workers=engine.config.workers,
        )
        return Response(body.model_dump_json(), media_type="application/json")

    @app.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics() -> Response:
        return Response(engine.metrics.render(), media_type=engine.metrics.content_type)

    endpoints = {r.path for r in app.routes if hasattr(r, "path")}
    app.add_middleware(MetricsMiddleware, engine=engine, endpoints=endpoints)
    return app


def families_of(registry: Any) -> list[FamilyEntry]:
    """The installed families of ``registry`` (the default one when None)."""
    from .._registry import default_registry

    reg = registry if registry is not None else default_registry()
    return [
        FamilyEntry(name=name, distribution=i.distribution, version=i.version)
        for name, i in sorted(reg.families().items())
    ]


__all__ = ["BufferResponse", "MetricsMiddleware", "create_app", "families_of"]
