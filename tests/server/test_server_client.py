"""The client helper's connection handling, against a scripted HTTP peer on 127.0.0.1: a
keep-alive connection the server closed while idle is replaced (once), chunked answers are
read whole, and error bodies become typed errors."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest

from sglang_mm_core import FetchError
from sglang_mm_core.client import Client
from sglang_mm_core.errors import ServerError


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    return data


class ScriptedPeer:
    """Serves one scripted raw answer per connection, then closes it."""

    def __init__(self, answers: list[bytes]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.answers = answers
        self.requests: list[bytes] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for answer in self.answers:
            conn, _ = self.sock.accept()
            with conn:
                self.requests.append(_read_request(conn))
                conn.sendall(answer)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def peer_factory() -> Iterator[list[ScriptedPeer]]:
    peers: list[ScriptedPeer] = []
    yield peers
    for p in peers:
        p.close()


def _json_answer(status: int, doc: object, extra: str = "") -> bytes:
    body = json.dumps(doc).encode()
    head = (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def test_an_idle_connection_closed_by_the_server_is_replaced(
    peer_factory: list[ScriptedPeer],
) -> None:
    ok = {"status": "ok"}
    # Keep-alive is announced, but the peer closes each connection after one answer.
    peer = ScriptedPeer([_json_answer(200, ok), _json_answer(200, {"status": "again"})])
    peer_factory.append(peer)
    with Client(peer.url) as c:
        assert c.health() == ok
        assert c.health() == {"status": "again"}
    assert len(peer.requests) == 2


def test_a_chunked_answer_is_read_whole(peer_factory: list[ScriptedPeer]) -> None:
    body = json.dumps({"rid": None, "length": 7, "per_item": [3], "modalities": ["image"]})
    body = body.encode()
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 5]), body[i : i + 5]) for i in range(0, len(body), 5)
    )
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunks
        + b"0\r\n\r\n"
    )
    peer = ScriptedPeer([answer])
    peer_factory.append(peer)
    with Client(peer.url) as c:
        count = c.tokens({"input_ids": [1, 2]})
    assert (count.length, count.per_item, count.modalities) == (7, [3], ["image"])


def test_error_bodies_become_typed_errors(peer_factory: list[ScriptedPeer]) -> None:
    fetch = {"error": {"type": "FetchError", "message": "image 1 (http): refused", "item": 1}}
    busy = {"error": {"type": "QueueFull", "message": "full", "item": None}}
    peer = ScriptedPeer(
        [
            _json_answer(400, fetch),
            _json_answer(503, busy, "Retry-After: 2\r\n"),
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 4\r\n\r\noops",
        ]
    )
    peer_factory.append(peer)
    with Client(peer.url) as c:
        with pytest.raises(FetchError) as e1:
            c.tokens({"input_ids": [1]})
        assert e1.value.item == 1 and e1.value.status == 400  # type: ignore[attr-defined]
        with pytest.raises(ServerError) as e2:
            c.tokens({"input_ids": [1]})
        assert (e2.value.status, e2.value.error_type, e2.value.retry_after) == (503, "QueueFull", 2)
        with pytest.raises(ServerError) as e3:
            c.tokens({"input_ids": [1]})
        assert e3.value.status == 502 and "oops" in str(e3.value)


def test_bad_base_url() -> None:
    with pytest.raises(ValueError, match=r"base_url must be http\(s\)://host\[:port\], got 'ftp:"):
        Client("ftp://127.0.0.1:1")


def test_request_body_is_the_json_document_of_the_request() -> None:
    """The hand-assembled body (base64 written straight in) parses to exactly what the JSON
    encoder would have written, for bytes of every kind, string sources and a rid."""
    import base64

    import numpy as np

    from sglang_mm_core import MmInput
    from sglang_mm_core.client import request_body

    blob = bytes(range(256)) * 3
    sources = [blob, bytearray(blob[:7]), memoryview(blob)[5:70], 'file:///a "b"\\c\n', b""]
    for rid in (None, 'r"1\u00e9'):
        req = MmInput(np.array([1, 2, 3]), sources, rid=rid)
        want = {
            "input_ids": [1, 2, 3],
            "images": [
                "data:;base64," + base64.b64encode(blob).decode(),
                "data:;base64," + base64.b64encode(blob[:7]).decode(),
                "data:;base64," + base64.b64encode(blob[5:70]).decode(),
                'file:///a "b"\\c\n',
                "data:;base64,",
            ],
        }
        if rid is not None:
            want["rid"] = rid
        assert json.loads(request_body(req)) == want
    assert json.loads(request_body(MmInput([7], []))) == {"input_ids": [7], "images": []}
    with pytest.raises(TypeError, match="bytes or str"):
        request_body(MmInput([7], [3]))  # type: ignore[list-item]
