"""Embedded mode's hand-over order: arrival order (the default) vs completion order.

A request is made slow deterministically: its image URL points at a local endpoint that holds
the response until the test opens its gate, so "the first request is still processing while
the second is parked" is a state the test sets up, not a race it hopes to win."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import requests
from srv_helpers import FamilySetup, data_url, wait_for
from test_server_faults import raw_request

from sglang_mm_core.errors import LaunchError
from sglang_mm_core.server import MmServer

GATE_WAIT_S = 30.0  # a gate nobody opens still lets its worker go eventually


class Gated:
    """One resource of `GatedServer`: ``hit`` is set when a client asks for it, and the
    response waits until ``open()``."""

    def __init__(self, url: str, data: bytes) -> None:
        self.url = url
        self.data = data
        self.hit = threading.Event()
        self.gate = threading.Event()

    def open(self) -> None:
        self.gate.set()


class GatedServer(http.server.ThreadingHTTPServer):
    """A 127.0.0.1 server whose every response waits for its resource's gate."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _GatedHandler)
        self.resources: dict[str, Gated] = {}
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def put(self, name: str, data: bytes) -> Gated:
        host, port = self.server_address[:2]
        res = Gated(f"http://{host!s}:{port}/{name}", data)
        self.resources[name] = res
        return res

    def close(self) -> None:
        for res in self.resources.values():
            res.open()
        self.shutdown()
        self.server_close()


class _GatedHandler(http.server.BaseHTTPRequestHandler):
    server: GatedServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        res = self.server.resources.get(self.path.strip("/"))
        if res is None:
            self.send_error(404)
            return
        res.hit.set()
        res.gate.wait(GATE_WAIT_S)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(res.data)))
        self.end_headers()
        self.wfile.write(res.data)


@pytest.fixture
def gated() -> Iterator[GatedServer]:
    server = GatedServer()
    yield server
    server.close()


def launch_local(fam: FamilySetup, launch: Any, **kw: Any) -> MmServer:
    """An embedded server allowed to fetch from 127.0.0.1 (the gated endpoint)."""
    spec = fam.spec(fetch={"allow_private_networks": True, "timeout_s": GATE_WAIT_S})
    srv: MmServer = launch(spec, **kw)
    return srv


def submit(pool: ThreadPoolExecutor, srv: MmServer, doc: dict[str, Any]) -> Future[Any]:
    return pool.submit(requests.post, srv.url + "/v1/submit", data=json.dumps(doc), timeout=60)


def text_doc(fam: FamilySetup, rid: str) -> dict[str, Any]:
    return {"rid": rid, "input_ids": fam.prompt(0)}


def url_doc(fam: FamilySetup, rid: str, url: str) -> dict[str, Any]:
    return {"rid": rid, "input_ids": fam.prompt(1), "images": [url]}


def answer_all(srv: MmServer, rids: list[str], futs: dict[str, Future[Any]]) -> None:
    for rid in rids:
        assert srv.push_result(rid, rid.encode(), "text/plain")
    for rid in rids:
        resp = futs[rid].result()
        assert resp.status_code == 200 and resp.text == rid


@pytest.mark.parametrize(
    ("order", "expected"), [("arrival", ["slow", "fast"]), ("completion", ["fast", "slow"])]
)
def test_slow_first_request(
    fam: FamilySetup,
    images: dict[str, bytes],
    launch: Any,
    gated: GatedServer,
    order: str,
    expected: list[str],
) -> None:
    srv = launch_local(fam, launch, workers=2, order=order)
    slow = gated.put("slow.jpg", images["jpeg_120x90"])
    with ThreadPoolExecutor(4) as pool:
        futs = {"slow": submit(pool, srv, url_doc(fam, "slow", slow.url))}
        assert slow.hit.wait(10), "the first request was not taken by a worker"
        fast = {
            "rid": "fast",
            "input_ids": fam.prompt(1),
            "images": [data_url(images["png_56x56"])],
        }
        futs["fast"] = submit(pool, srv, fast)
        wait_for(lambda: srv.engine.parked_count() == 1, what="the second request parked")
        if order == "arrival":  # parked, but held back by the first: nothing to hand over
            assert srv.wait_ingress(50) is False
        got = srv.drain(10).rids
        slow.open()
        assert srv.wait_ingress(10_000)
        batch = srv.drain(10)
        got += batch.rids
        assert got == expected
        if order == "arrival":  # both at once, their ids back to back: a view, no copy
            assert len(batch) == 2 and not batch.data.flags.owndata
            for i, image in enumerate((images["jpeg_120x90"], images["png_56x56"])):
                want = fam.pipeline.process(fam.request([image]))
                np.testing.assert_array_equal(batch.ids(i), want.input_ids)
        answer_all(srv, got, futs)


@pytest.mark.parametrize("fate", ["fails", "expires", "client_leaves"])
def test_a_request_leaving_in_the_middle_does_not_block_the_next(
    fam: FamilySetup, launch: Any, gated: GatedServer, fate: str
) -> None:
    """A (parked), M (still processing), C (parked behind M): only A is drainable until M
    leaves for good (answered 400, 503 past its deadline, or its client gone); then C is."""
    deadline = {"deadline_s": 1.5} if fate == "expires" else {}
    srv = launch_local(fam, launch, workers=2, **deadline)
    bad = b"this is not an image" if fate == "fails" else b""
    middle = gated.put("middle", bad)
    with ThreadPoolExecutor(4) as pool:
        futs = {"A": submit(pool, srv, text_doc(fam, "A"))}
        assert srv.wait_ingress(10_000)
        doc = json.dumps(url_doc(fam, "M", middle.url)).encode()
        sock = socket.create_connection((srv.host, srv.port))
        try:
            sock.sendall(raw_request(srv, "/v1/submit", doc))
            assert middle.hit.wait(10), "M was not taken by a worker"
            futs["C"] = submit(pool, srv, text_doc(fam, "C"))
            wait_for(lambda: srv.engine.parked_count() == 2, what="C parked")
            assert srv.drain(10).rids == ["A"]
            assert srv.wait_ingress(50) is False  # C is parked but held back by M
            if fate == "fails":
                middle.open()
            elif fate == "client_leaves":
                sock.close()
            assert srv.wait_ingress(10_000)  # the deadline case: M answered 503 at 1.5 s
            assert srv.drain(10).rids == ["C"]
            if fate != "client_leaves":
                status, error = _status_and_error(sock)
                want = (400, "DecodeError") if fate == "fails" else (503, "DeadlineExceeded")
                assert (status, error) == want
        finally:
            sock.close()
        answer_all(srv, ["A", "C"], futs)
    assert not srv.engine._live and srv.engine.parked_count() == 0


def _status_and_error(sock: socket.socket) -> tuple[int, str]:
    from test_server_faults import read_response

    status, _, body = read_response(sock)
    return status, json.loads(body)["error"]["type"]


def test_first_in_line_parks_past_a_full_ring(
    fam: FamilySetup, images: dict[str, bytes], launch: Any, gated: GatedServer
) -> None:
    """Arrival order with a ring of one: B fills it but is held back by A; A must still park
    (the host could free no space before it does), or both would wait for the deadline."""
    srv = launch_local(fam, launch, workers=2, ring_size=1)
    slow = gated.put("a.jpg", images["jpeg_64x48"])
    with ThreadPoolExecutor(4) as pool:
        futs = {"A": submit(pool, srv, url_doc(fam, "A", slow.url))}
        assert slow.hit.wait(10)
        futs["B"] = submit(pool, srv, text_doc(fam, "B"))
        wait_for(lambda: srv.engine.parked_count() == 1, what="B parked")
        slow.open()
        assert srv.wait_ingress(10_000)
        assert srv.drain(10).rids == ["A", "B"]
        answer_all(srv, ["A", "B"], futs)


def test_shutdown_answers_held_back_requests_once(
    fam: FamilySetup, images: dict[str, bytes], launch: Any, gated: GatedServer
) -> None:
    srv = launch_local(fam, launch, workers=2)
    slow = gated.put("a.jpg", images["jpeg_64x48"])
    with ThreadPoolExecutor(4) as pool:
        a = submit(pool, srv, url_doc(fam, "A", slow.url))
        assert slow.hit.wait(10)
        b = submit(pool, srv, text_doc(fam, "B"))
        wait_for(lambda: srv.engine.parked_count() == 1, what="B parked")
        stopper = threading.Thread(target=srv.shutdown, kwargs={"timeout_s": 10})
        stopper.start()
        # B (parked, held back) is answered at once, while A's worker is still fetching.
        resp = b.result()
        assert resp.status_code == 503 and resp.json()["error"]["type"] == "ShuttingDown"
        assert stopper.is_alive()
        slow.open()  # A finishes processing during shutdown: it is refused, not parked
        stopper.join(20)
        assert not stopper.is_alive()
        resp = a.result()
        assert resp.status_code == 503 and resp.json()["error"]["type"] == "ShuttingDown"
    assert not srv.engine._live and srv.engine.parked_count() == 0
    assert srv.drain(10).rids == []


@pytest.mark.parametrize("order", ["fifo", "", None, 1])
def test_launch_refuses_an_unknown_order(fam: FamilySetup, launch: Any, order: Any) -> None:
    with pytest.raises(LaunchError, match=r"^order must be 'arrival' or 'completion', got "):
        launch(order=order)
