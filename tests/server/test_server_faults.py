"""Faults: clients that leave, slow clients, a full queue, deadlines, shutdown under load, and
the standalone service (`sglang-mm serve`) stopped by SIGTERM while busy."""

from __future__ import annotations

import gc
import json
import signal
import socket
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from srv_helpers import (
    FamilySetup,
    HostLoop,
    assert_same_output,
    data_url,
    start_serve,
    wait_for,
)

from sglang_mm_core.client import Client
from sglang_mm_core.errors import RidError
from sglang_mm_core.server import MmServer
from sglang_mm_core.server.codec import decode_safetensors


def raw_request(srv: MmServer, path: str, body: bytes, *, declared: int | None = None) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if declared is None else declared}\r\n\r\n"
    )
    return head.encode() + body


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length, read off a raw socket."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before the response headers"
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = sock.recv(1 << 20)
        assert chunk, "connection closed in the middle of the body"
        body += chunk
    return status, headers, body


def metric(srv: MmServer, name: str) -> float:
    for line in requests.get(srv.url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    raise AssertionError(f"metric {name} not found")


def submit(pool: ThreadPoolExecutor, srv: MmServer, doc: dict[str, Any]) -> Future[Any]:
    return pool.submit(requests.post, srv.url + "/v1/submit", data=json.dumps(doc), timeout=30)


# -- clients that leave ------------------------------------------------------------------------


def test_client_leaves_while_parked(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch()
    doc = {"rid": "gone", "input_ids": fam.prompt(1), "images": [data_url(images["jpeg_64x48"])]}
    with socket.create_connection((srv.host, srv.port)) as s:
        s.sendall(raw_request(srv, "/v1/submit", json.dumps(doc).encode()))
        wait_for(lambda: srv.engine.parked_count() == 1, what="parked")
        feature = weakref.ref(srv.engine._ring[0].parked.items[0].feature.array)
        assert feature() is not None
    # Forgotten: out of the ring, its buffers freed, and unknown to the host.
    wait_for(lambda: srv.engine.parked_count() == 0, what="withdrawn from the ring")
    gc.collect()
    assert feature() is None
    assert not srv.engine._live
    assert len(srv.drain(10)) == 0
    with pytest.raises(RidError):
        srv.push_result("gone", b"x")
    assert metric(srv, "sglang_mm_client_disconnects_total") == 1


def test_client_leaves_after_drain(fam: FamilySetup, launch: Any) -> None:
    srv = launch()
    doc = {"rid": "late", "input_ids": fam.prompt(0)}
    with socket.create_connection((srv.host, srv.port)) as s:
        s.sendall(raw_request(srv, "/v1/submit", json.dumps(doc).encode()))
        assert srv.wait_ingress(10_000)
        batch = srv.drain(1)
        assert batch.rids == ["late"]
    wait_for(lambda: metric(srv, "sglang_mm_client_disconnects_total") == 1, what="disconnect")
    # The host's answer for a client that left is accepted quietly (False), exactly once.
    assert srv.push_result("late", b"too late") is False
    with pytest.raises(RidError, match="already answered"):
        srv.push_result("late", b"again")
    assert not srv.engine._live


def test_client_leaves_while_processing(
    fam: FamilySetup, images: dict[str, bytes], launch: Any, http_server: Any
) -> None:
    srv = launch(fam.spec(fetch={"allow_private_networks": True, "timeout_s": 1.0}), workers=1)
    slow = http_server.url("/slow/400?interval=0.01")  # a 4 s download, cut at 1 s
    doc = {"input_ids": fam.prompt(1), "images": [slow]}
    with socket.create_connection((srv.host, srv.port)) as s:
        s.sendall(raw_request(srv, "/v1/preprocess", json.dumps(doc).encode()))
        wait_for(lambda: bool(http_server.seen), what="the worker fetching")
    wait_for(lambda: not srv.engine._live, what="the ticket forgotten")
    # The worker finishes its fetch, drops the result, and serves the next client normally.
    req = fam.request([images["png_56x56"]])
    assert_same_output(Client(srv.url).preprocess(req), fam.pipeline.process(req))


def test_client_leaves_mid_upload(fam: FamilySetup, launch: Any) -> None:
    srv = launch()
    with socket.create_connection((srv.host, srv.port)) as s:
        s.sendall(raw_request(srv, "/v1/preprocess", b'{"input_ids": [1,', declared=10_000))
    wait_for(lambda: metric(srv, "sglang_mm_client_disconnects_total") == 1, what="disconnect")
    assert requests.get(srv.url + "/health", timeout=10).status_code == 200
    assert not srv.engine._live


# -- slow clients ------------------------------------------------------------------------------


def test_slow_uploader_does_not_block_others(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch(workers=1)
    req = fam.request([images["jpeg_120x90"]], rid="slow")
    body = json.dumps(
        {"rid": "slow", "input_ids": fam.prompt(1), "images": [data_url(images["jpeg_120x90"])]}
    ).encode()
    wire = raw_request(srv, "/v1/preprocess", body)
    pieces = [wire[i : i + len(wire) // 5 + 1] for i in range(0, len(wire), len(wire) // 5 + 1)]
    with socket.create_connection((srv.host, srv.port)) as s, Client(srv.url) as other:
        for k, piece in enumerate(pieces):
            s.sendall(piece)
            if k < len(pieces) - 1:
                # While this client dawdles, another one is served in full.
                quick = fam.request([images["png_56x56"]])
                assert_same_output(other.preprocess(quick), fam.pipeline.process(quick))
        status, headers, answer = read_response(s)
    assert status == 200 and headers["x-format"] == "safetensors"
    assert_same_output(decode_safetensors(answer), fam.pipeline.process(req))


def test_slow_reader_does_not_block_others(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch(workers=1)
    names = ["jpeg_200x150", "jpeg_200x150", "jpeg_120x90"]
    doc = {"input_ids": fam.prompt(3), "images": [data_url(images[n]) for n in names]}
    with socket.create_connection((srv.host, srv.port)) as s, Client(srv.url) as other:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(raw_request(srv, "/v1/preprocess", json.dumps(doc).encode()))
        for _ in range(3):  # the answer waits unread in the socket meanwhile
            quick = fam.request([images["png_56x56"]])
            assert_same_output(other.preprocess(quick), fam.pipeline.process(quick))
        status, _, answer = read_response(s)
    assert status == 200
    assert_same_output(
        decode_safetensors(answer), fam.pipeline.process(fam.request([images[n] for n in names]))
    )


def test_upload_past_the_deadline_is_408(fam: FamilySetup, launch: Any) -> None:
    srv = launch(deadline_s=0.3)
    with socket.create_connection((srv.host, srv.port)) as s:
        s.sendall(raw_request(srv, "/v1/preprocess", b'{"input_ids": [1', declared=100))
        status, _, body = read_response(s)
    assert status == 408
    assert json.loads(body)["error"]["type"] == "RequestTimeout"


# -- a full queue and the deadline -------------------------------------------------------------


def _block_the_worker(fam: FamilySetup, srv: MmServer, pool: ThreadPoolExecutor) -> list[Any]:
    """With one worker and a ring of one: A parks, B finishes and waits for ring space (the
    worker is stuck there), C waits in the queue of one. Nothing more fits."""
    futs = [submit(pool, srv, {"rid": "A", "input_ids": fam.prompt(0)})]
    wait_for(lambda: srv.engine.parked_count() == 1, what="A parked")
    futs.append(submit(pool, srv, {"rid": "B", "input_ids": fam.prompt(0)}))
    wait_for(lambda: "B" in srv.engine._pending and srv.engine.queue_depth() == 0, what="B taken")
    futs.append(submit(pool, srv, {"rid": "C", "input_ids": fam.prompt(0)}))
    wait_for(lambda: srv.engine.queue_depth() == 1, what="C queued")
    return futs


def test_full_queue_is_503_with_retry_after(fam: FamilySetup, launch: Any) -> None:
    srv = launch(workers=1, queue_size=1, ring_size=1)
    with ThreadPoolExecutor(4) as pool:
        futs = _block_the_worker(fam, srv, pool)
        for path in ("/v1/submit", "/v1/preprocess", "/v1/tokens"):
            resp = requests.post(
                srv.url + path, data=json.dumps({"input_ids": fam.prompt(0)}), timeout=30
            )
            assert resp.status_code == 503, path
            assert resp.headers["Retry-After"] == "1"
            assert resp.json()["error"]["type"] == "QueueFull"
        assert metric(srv, "sglang_mm_queue_depth") == 1
        # The host drains: everything accepted is answered.
        with HostLoop(srv, lambda b, i: (b.rids[i].encode(), "text/plain")):
            assert [f.result().text for f in futs] == ["A", "B", "C"]


def test_deadline_passes_while_waiting_for_a_worker(fam: FamilySetup, launch: Any) -> None:
    srv = launch(workers=1, queue_size=4, ring_size=1, deadline_s=0.5)
    with ThreadPoolExecutor(4) as pool:
        a = submit(pool, srv, {"rid": "A", "input_ids": fam.prompt(0)})
        wait_for(lambda: srv.engine.parked_count() == 1, what="A parked")
        b = submit(pool, srv, {"rid": "B", "input_ids": fam.prompt(0)})
        c = submit(pool, srv, {"rid": "C", "input_ids": fam.prompt(0)})
        for fut in (b, c):  # stuck behind the full ring past the deadline
            resp = fut.result()
            assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
            assert resp.json()["error"]["type"] == "DeadlineExceeded"
        # A was processed in time: parked, it is the host's to answer, deadline or not.
        assert srv.wait_ingress(0)
        assert srv.drain(10).rids == ["A"]
        assert srv.push_result("A", b"A")
        assert a.result().text == "A"
        with pytest.raises(RidError):
            srv.push_result("B", b"B")


# -- shutdown ----------------------------------------------------------------------------------


def test_shutdown_under_load_answers_everything(
    fam: FamilySetup, images: dict[str, bytes], launch: Any
) -> None:
    srv = launch(workers=2, queue_size=8)
    doc = {"input_ids": fam.prompt(1), "images": [data_url(images["jpeg_120x90"])]}
    outcomes: list[str] = []
    lock = threading.Lock()
    answered = threading.Event()
    stop = threading.Event()

    def client(k: int) -> None:
        n = 0
        while not stop.is_set() and n < 40:
            n += 1
            try:  # a fresh connection each time: no request rides a connection closed idle
                with requests.Session() as s:
                    r = s.post(srv.url + "/v1/submit", data=json.dumps(doc), timeout=30)
                outcome = str(r.status_code)
            except requests.ConnectionError as e:
                refused = isinstance(getattr(e.args[0], "reason", None), ConnectionRefusedError)
                outcome = "refused" if refused or "refused" in str(e).lower() else f"lost: {e}"
            with lock:
                outcomes.append(outcome)
                if outcome == "200" and outcomes.count("200") >= 10:
                    answered.set()
            if outcome != "200":
                break

    def answer(batch: Any, i: int) -> tuple[bytes, str]:
        time.sleep(0.01)  # a busy host: requests pile up queued and parked
        return b"ok", "text/plain"

    with HostLoop(srv, answer, max_n=4), ThreadPoolExecutor(16) as pool:
        futs = [pool.submit(client, k) for k in range(16)]
        assert answered.wait(30)
        srv.shutdown(timeout_s=5)
        stop.set()
        for f in futs:
            f.result()
    counts = {k: outcomes.count(k) for k in set(outcomes)}
    assert set(counts) <= {"200", "503", "refused"}, counts
    assert counts.get("200", 0) >= 10 and counts.get("503", 0) >= 1, counts
    assert not srv.engine._live
    with pytest.raises(requests.ConnectionError):
        requests.get(srv.url + "/health", timeout=5)


def test_shutdown_answers_drained_but_unanswered(fam: FamilySetup, launch: Any) -> None:
    srv = launch()
    with ThreadPoolExecutor(2) as pool:
        fut = submit(pool, srv, {"rid": "held", "input_ids": fam.prompt(0)})
        assert srv.wait_ingress(10_000)
        assert srv.drain(1).rids == ["held"]
        srv.shutdown(timeout_s=2)  # the host never answers
        resp = fut.result()
    assert resp.status_code == 503 and resp.json()["error"]["type"] == "ShuttingDown"
    with pytest.raises(RidError):
        srv.push_result("held", b"x")


# -- the standalone service --------------------------------------------------------------------


def test_serve_command_parity_and_sigterm_under_load(
    fam: FamilySetup, images: dict[str, bytes], tmp_path: Path, http_server: Any
) -> None:
    spec = fam.spec(fetch={"allow_private_networks": True, "timeout_s": 5.0})
    url, proc = start_serve(spec, tmp_path, "--workers", "1", "--queue-size", "4")
    try:
        assert requests.get(url + "/health", timeout=10).json()["status"] == "ok"
        gone = requests.post(url + "/v1/submit", data=b"{}", timeout=10)
        assert gone.status_code == 404  # embedded mode only
        req = fam.request([images["jpeg_64x48"], images["webp_100x60"]], rid="cli")
        assert_same_output(Client(url).preprocess(req), fam.pipeline.process(req))
        # Busy: one slow download in the worker, the queue filling behind it.
        slow = {"input_ids": fam.prompt(1), "images": [http_server.url("/slow/60?interval=0.02")]}
        with ThreadPoolExecutor(6) as pool:
            futs = [
                pool.submit(
                    requests.post, url + "/v1/preprocess", data=json.dumps(slow), timeout=30
                )
                for _ in range(5)
            ]
            wait_for(lambda: bool(http_server.seen), what="the slow download")
            time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            statuses = sorted(f.result().status_code for f in futs)
        # The running one finishes (the bytes are no image: 400), the queued ones get 503.
        assert statuses[0] == 400 and set(statuses[1:]) == {503}, statuses
        assert proc.wait(30) == 0  # a graceful stop is a normal exit
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
