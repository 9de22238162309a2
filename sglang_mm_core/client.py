"""A small client of the preprocessing server: post a request, get back the same `MmOutput`
(or `TokenCount`) the in-process pipeline returns, or the same typed error.

    from sglang_mm_core.client import Client
    with Client("http://127.0.0.1:8000") as c:
        out = c.preprocess(MmInput(input_ids=ids, images=[jpeg_bytes]))

Image and video bytes are sent as ``data:`` URLs; string sources (URLs, paths) are sent as they
are and fetched by the server under its policy; a video's options (``{"video": source, "fps":
2.0, ...}``) go with it. A 4xx answer raises the error class it names
(`FetchError`, `LimitError` ...) when that is one of ours, else `ServerError`; the HTTP status
is on the exception as ``status``, and the error's structured fields (a limit's name and
values, a detected format) as its attributes."""

from __future__ import annotations

import base64
import http.client
import json
import threading
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import numpy as np

from . import errors as _errors
from ._carriers import MmInput, MmOutput, TokenCount
from .errors import MmError, MmRequestError, ServerError

Format = Literal["safetensors", "json"]
DEFAULT_TIMEOUT_S = 120.0


def _source(src: Any) -> str:
    if isinstance(src, (bytes, bytearray, memoryview)):
        return "data:;base64," + base64.b64encode(src).decode("ascii")
    if isinstance(src, str):
        return src
    raise TypeError(f"sources must be bytes or str, got {type(src).__name__}")


def request_body(request: MmInput | Mapping[str, Any]) -> bytes:
    """The JSON body of one request. Image bytes go in as base64 written straight into the
    body: its alphabet needs no JSON escaping, so no encoder pass runs over the image (that
    pass cost about as much as the base64 itself)."""
    if isinstance(request, Mapping):
        return json.dumps(request).encode()
    ids = np.asarray(request.input_ids).tolist()
    parts = [b'{"input_ids":', json.dumps(ids, separators=_SEP).encode(), b',"images":[']
    for k, src in enumerate(request.images):
        if k:
            parts.append(b",")
        _put_source(parts, src)
    parts.append(b"]")
    if request.videos:
        parts.append(b',"videos":[')
        for k, video in enumerate(request.videos):
            if k:
                parts.append(b",")
            if isinstance(video, Mapping):
                if "video" not in video:
                    raise TypeError("a video given as a mapping holds its source under 'video'")
                options = {str(n): v for n, v in video.items() if n != "video"}
                parts.append(b'{"video":')
                _put_source(parts, video["video"])
                for name, value in options.items():
                    parts += [b",", json.dumps(name).encode(), b":", json.dumps(value).encode()]
                parts.append(b"}")
            else:
                _put_source(parts, video)
        parts.append(b"]")
    if request.rid is not None:
        parts += [b',"rid":', json.dumps(request.rid).encode()]
    parts.append(b"}")
    return b"".join(parts)


_SEP = (",", ":")


def _put_source(parts: list[bytes], src: Any) -> None:
    if isinstance(src, (bytes, bytearray, memoryview)):
        parts += [b'"data:;base64,', base64.b64encode(src), b'"']
    else:
        parts.append(json.dumps(_source(src)).encode())


def error_from(status: int, body: bytes, headers: Mapping[str, str]) -> MmError:
    """The exception an error answer stands for."""
    fields: dict[str, Any] = {}
    try:
        err = json.loads(body)["error"]
        kind, message, item = str(err["type"]), str(err["message"]), err.get("item")
        fields = dict(err.get("fields") or {})
        modality = str(err.get("modality") or "image")
    except (ValueError, KeyError, TypeError):
        kind, message, item = "HTTPError", body[:200].decode("utf-8", "replace"), None
        modality = "image"
    cls = getattr(_errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, MmRequestError):
        known = {k: v for k, v in fields.items() if k in cls.field_names}
        out = cls(message, item=item, status=status, **known)
        out.modality = modality
        return out
    retry = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    server_error = ServerError(
        f"{status} {kind}: {message}",
        status=status,
        error_type=kind,
        item=item,
        retry_after=float(retry) if retry and retry.replace(".", "", 1).isdigit() else None,
    )
    server_error.modality = modality
    return server_error


def decode_output(body: bytes | memoryview, fmt: str) -> MmOutput:
    """An `MmOutput` from a ``/v1/preprocess`` body (``fmt`` from ``X-Format``)."""
    from .server import codec

    if fmt == "json":
        return codec.decode_json(bytes(body))
    return codec.decode_safetensors(body)


class Client:
    """A client of one server. Each thread gets its own keep-alive connection (the stdlib's
    `http.client`, never a proxy: the server is a local service). An answer body is read
    straight into one buffer that the decoded arrays then view: no further copy."""

    def __init__(self, base_url: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port], got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._local = threading.local()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout)
        self._local.conn = conn
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _request(
        self, method: str, path: str, body: bytes | None = None
    ) -> tuple[int, dict[str, str], memoryview]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        for attempt in (0, 1):
            conn, reused = self._connection()
            try:
                conn.request(method, self._prefix + path, body=body, headers=headers)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop()
                if reused and attempt == 0:
                    continue  # the server had closed this idle connection: retry on a new one
                raise
            except BaseException:
                self._drop()
                raise
            try:
                data = _read_body(resp)
            except BaseException:
                self._drop()
                raise
            if resp.will_close:
                self._drop()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        raise AssertionError("unreachable")

    def _post(self, path: str, body: bytes) -> tuple[dict[str, str], memoryview]:
        status, headers, data = self._request("POST", path, body)
        if status >= 400:
            raise error_from(status, bytes(data), headers)
        return headers, data

    def preprocess(
        self,
        request: MmInput | Mapping[str, Any],
        *,
        fmt: Format = "safetensors",
        compact: bool = False,
    ) -> MmOutput:
        """``POST /v1/preprocess``: the request's `MmOutput` (arrays view the answer body).
        ``compact=True`` asks for compact features (`CompactTensor` items, safetensors)."""
        path = "/v1/preprocess?format=json" if fmt == "json" else "/v1/preprocess"
        if compact:
            path += "&compact=1" if "?" in path else "?compact=1"
        headers, data = self._post(path, request_body(request))
        return decode_output(data, headers.get("x-format", fmt))

    def tokens(self, request: MmInput | Mapping[str, Any]) -> TokenCount:
        """``POST /v1/tokens``: lengths from image headers only."""
        _, data = self._post("/v1/tokens", request_body(request))
        doc = json.loads(bytes(data))
        per_item = [int(n) for n in doc["per_item"]]
        return TokenCount(int(doc["length"]), per_item, [str(m) for m in doc["modalities"]])

    def submit(self, request: MmInput | Mapping[str, Any]) -> tuple[bytes, str]:
        """``POST /v1/submit`` (embedded mode): the host's answer body and content type."""
        headers, data = self._post("/v1/submit", request_body(request))
        return bytes(data), headers.get("content-type", "")

    def _get_json(self, path: str) -> Any:
        status, headers, data = self._request("GET", path)
        if status >= 400:
            raise error_from(status, bytes(data), headers)
        return json.loads(bytes(data))

    def health(self) -> dict[str, Any]:
        return dict(self._get_json("/health"))

    def families(self) -> dict[str, Any]:
        return dict(self._get_json("/v1/families"))

    def close(self) -> None:
        """Close the calling thread's connection (others close when their thread ends)."""
        self._drop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_body(resp: http.client.HTTPResponse) -> memoryview:
    """The whole body, read into one fresh buffer (one copy from the socket)."""
    length = resp.length
    if length is None:  # no Content-Length (chunked): let http.client assemble it
        return memoryview(resp.read())
    view = np.empty(length, dtype=np.uint8).data
    got = 0
    while got < length:
        n = resp.readinto(view[got:])
        if not n:
            raise http.client.IncompleteRead(bytes(view[:got]), length - got)
        got += n
    return view


def preprocess(
    base_url: str,
    request: MmInput | Mapping[str, Any],
    *,
    fmt: Format = "safetensors",
    compact: bool = False,
) -> MmOutput:
    """One request to the server at ``base_url``, answered as an `MmOutput`."""
    with Client(base_url) as c:
        return c.preprocess(request, fmt=fmt, compact=compact)


__all__ = ["Client", "ServerError", "decode_output", "error_from", "preprocess", "request_body"]
