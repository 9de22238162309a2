"""Load against a real `sglang-mm serve` process (issue 24): 200 connections trickling their
requests, a storm of clients resetting mid-upload and mid-answer, SIGTERM under that load, and
the largest bodies the shape checks let through. Throughout, /health answers within 1 s and
every answer that arrives is the expected one, byte for byte (or a 503 once the stop began);
a stop logs one line per request it cuts off, never a traceback."""

from __future__ import annotations

import json
import random
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import requests
from srv_helpers import FamilySetup, data_url, make_image, start_serve_log
from test_server_hardening import HEALTH_S, REJECT_S, Probe

from sglang_mm_core import load_output
from sglang_mm_core.server import app as server_app

HEADER_TIMEOUT_S = 5.0
DEADLINE_S = 20.0
BIG_IDS = 1 << 20  # token ids that make an answer of 8 MiB, past the socket buffers


def _connect(url: str, rcvbuf: int | None = None) -> socket.socket:
    host, port = url.rsplit("/", 1)[-1].rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:  # before connecting: the window stays small
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(30)
    sock.connect((host, int(port)))
    return sock


def _reset(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: a reset, as a killed client sends."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def _head(body: bytes) -> bytes:
    return (
        "POST /v1/preprocess HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()


def _pieces(data: bytes, n: int) -> list[bytes]:
    step = max(1, -(-len(data) // n))
    return [data[i : i + step] for i in range(0, len(data), step)]


def _read_answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """The status line and headers, and the body, of an answer read to the connection's end."""
    got = bytearray()
    while chunk := sock.recv(1 << 16):
        got += chunk
    head, _, body = bytes(got).partition(b"\r\n\r\n")
    return head, body


def _verdict(head: bytes, body: bytes, want: bytes) -> str:
    """ "200" (the expected bytes), "503", "none" (no answer at all) or what went wrong."""
    if not head:
        return "none"
    status = head.split(b"\r\n", 1)[0]
    if status.startswith(b"HTTP/1.1 503"):
        return "503"
    if not status.startswith(b"HTTP/1.1 200"):
        return f"status {status[:40]!r}"
    if body != want:
        return f"corrupt 200 ({len(body)} of {len(want)} bytes)"
    return "200"


def _trickle(url: str, request: bytes, head_len: int, pause: float) -> tuple[bytes, bytes]:
    """Send ``request`` in small pieces with pauses (the head in 4, the body in 4), then read
    the whole answer."""
    with _connect(url) as sock:
        for piece in _pieces(request[:head_len], 4) + _pieces(request[head_len:], 4):
            sock.sendall(piece)
            time.sleep(pause)
        return _read_answer(sock)


@dataclass
class Storm:
    """Clients that leave with a reset: mid-upload, and after reading part of an answer too
    big for the socket buffers (the server is writing it when the reset comes)."""

    url: str
    big: bytes  # a request whose answer is megabytes

    def one(self, k: int) -> None:
        head = _head(self.big)
        try:
            sock = _connect(self.url, rcvbuf=32 * 1024)
        except OSError:
            return  # the listener closed (a stop)
        try:
            if k % 2 == 0:  # mid-upload
                sock.sendall(head + self.big[: random.randrange(1, len(self.big))])
                time.sleep(0.01)
            else:  # mid-answer
                sock.sendall(head + self.big)
                want = random.randrange(1, 256 * 1024)
                got = 0
                while got < want and (chunk := sock.recv(16 * 1024)):
                    got += len(chunk)
        except OSError:
            pass
        finally:
            _reset(sock)

    def run(self, n: int, concurrency: int = 8) -> None:
        ks = iter(range(n))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    k = next(ks, None)
                if k is None:
                    return
                self.one(k)

        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)


class HealthProbe(Probe):
    """The hardening tests' probe (/health under 1 s, the good request exact) without their
    bound on RSS growth: a storm has megabytes of answers in flight, and the server keeps
    freed memory for reuse."""

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self.failures, self.failures[:5]
        assert self.health_worst < HEALTH_S, f"/health took {self.health_worst:.2f} s"


@dataclass
class Served:
    url: str
    proc: subprocess.Popen[str]
    stderr: Callable[[], str]
    good: bytes
    want: bytes
    big: bytes
    want_big: bytes

    def probe(self) -> HealthProbe:
        return HealthProbe(self.url, self.proc.pid, self.good, self.want)


def _big_request(fam: FamilySetup) -> bytes:
    image = make_image(1200, 900, "JPEG", 7)
    ids = fam.prompt(1) + [7] * BIG_IDS
    return json.dumps({"input_ids": ids, "images": [data_url(image)]}).encode()


def _serve(fam: FamilySetup, tmp: Path, *extra: str) -> Served:
    url, proc, stderr = start_serve_log(
        fam.spec(),
        tmp,
        "--workers",
        "2",
        "--deadline-s",
        str(DEADLINE_S),
        "--header-timeout-s",
        str(HEADER_TIMEOUT_S),
        "--queue-size",
        "512",
        *extra,
    )
    good = json.dumps(
        {"input_ids": fam.prompt(1), "images": [data_url(make_image(64, 48, "JPEG", 1))]}
    ).encode()
    big = _big_request(fam)
    answers = [requests.post(url + "/v1/preprocess", data=b, timeout=60) for b in (good, big)]
    assert [a.status_code for a in answers] == [200, 200]
    assert len(answers[1].content) > 8 << 20  # past the socket buffers of both ends
    return Served(url, proc, stderr, good, answers[0].content, big, answers[1].content)


@pytest.fixture(scope="module")
def served(fam: FamilySetup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = _serve(fam, tmp_path_factory.mktemp("storms"))
    try:
        yield s
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def _no_traceback(log: str) -> None:
    assert "Traceback" not in log, log[-4000:]
    assert "Exception in ASGI application" not in log, log[-4000:]
    assert "ERROR" not in log, log[-4000:]


# -- 200 slow connections -----------------------------------------------------------------------


def test_200_concurrent_trickling_connections(served: Served) -> None:
    """Each sends its head and its body in pieces with pauses (the head well within the header
    timeout, counted from the connection opening), all at once; every answer is exact."""
    request = _head(served.good) + served.good
    head_len = len(_head(served.good))
    verdicts: list[str] = []
    with served.probe():

        def client() -> None:
            try:
                verdicts.append(
                    _verdict(*_trickle(served.url, request, head_len, 0.15), served.want)
                )
            except OSError as e:
                verdicts.append(f"error: {e}")

        threads = [threading.Thread(target=client) for _ in range(200)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    counts = {v: verdicts.count(v) for v in set(verdicts)}
    assert counts == {"200": 200}, counts


# -- a storm of resets ------------------------------------------------------------------------


def test_reset_storm_mid_upload_and_mid_answer(served: Served) -> None:
    with served.probe():
        Storm(served.url, served.big).run(120)
    # Still serving, exactly: a small answer and one of megabytes, read to the end.
    with _connect(served.url) as sock:
        sock.sendall(_head(served.big) + served.big)
        assert _verdict(*_read_answer(sock), served.want_big) == "200"
    r = requests.post(served.url + "/v1/preprocess", data=served.good, timeout=30)
    assert r.status_code == 200 and r.content == served.want
    metrics = requests.get(served.url + "/metrics", timeout=5).text
    gone = [ln for ln in metrics.splitlines() if ln.startswith("sglang_mm_client_disconnects")]
    assert gone and float(gone[0].split()[1]) > 0, gone


# -- the largest bodies the shape checks let through ------------------------------------------


def _bodies(fam: FamilySetup) -> dict[str, tuple[bytes, int]]:
    n = 1 << 21  # --max-input-ids at its default
    cap = 64 << 20  # limits.max_body_bytes at its default
    data = "data:image/png;base64,"
    return {
        "max_input_ids": (
            b'{"input_ids": [' + b",".join([b"9223372036854775807"] * n) + b"]}",
            200,
        ),
        "4096_other_values": (
            json.dumps({"input_ids": [1], "images": ["x" * 16_000] * 4096}).encode(),
            413,  # limits.max_items, from the parsed request
        ),
        "64_members_of_big_strings": (
            json.dumps(
                {"input_ids": [1], **{f"k{i}": "y" * 1_000_000 for i in range(63)}}
            ).encode(),
            422,
        ),
        "data_url_near_the_body_cap": (
            json.dumps(
                {"input_ids": fam.prompt(1), "images": [data + "A" * (cap - 4096 - len(data))]}
            ).encode(),
            400,  # not an image
        ),
    }


def test_the_largest_bodies_do_not_hold_health(served: Served, fam: FamilySetup) -> None:
    for name, (body, status) in _bodies(fam).items():
        with served.probe() as probe:
            time.sleep(0.1)
            r = requests.post(served.url + "/v1/preprocess", data=body, timeout=60)
            time.sleep(0.1)
        assert r.status_code == status, (name, r.text[:300])
        assert probe.health_worst < HEALTH_S, (name, probe.health_worst)
        if name == "max_input_ids":
            ids = load_output(r.content).input_ids
            assert len(ids) == 1 << 21 and (ids == 2**63 - 1).all()


@pytest.mark.parametrize(
    "ids",
    [
        "1,2,3",
        " 1 , 2 ,\n3\t",
        "0,9223372036854775807",
        "9223372036854775808",
        "99999999999999999999",
        "007",
        "1,,2",
        "1 2",
        ",1",
        "1,",
        "",
        "-1",
        "1.0",
        "1e3",
        "true",
        '"5"',
        "[1]",
    ],
)
@pytest.mark.parametrize(
    "around",
    [
        '{"input_ids": [%s]}',
        '{"input_ids": [4], "input_ids": [%s]}',
        '{"input_ids": [%s], "input_ids": [4]}',
        '{"rid": "\\"input_ids\\": [1]", "input_ids" :\n[%s], "images": ["a"]}',
        '{"input_ids": [%s], "images": [1]}',
        '{"input_ids": [%s], "videos": [{"video": "v", "input_ids": [1]}]}',
        '{"input_ids": [%s], "extra": 1}',
        '{"input_ids": [%s]',
    ],
)
def test_natively_parsed_ids_give_what_pydantic_gives(ids: str, around: str) -> None:
    """The token ids parsed natively give the request pydantic gives, or decline."""
    body = (around % ids).encode()
    want = server_app._parse(body)
    got = server_app._parse_sliced(body)
    if got is None:
        return  # declined: the caller parses the whole body
    if isinstance(want, str):
        assert got == want
    else:
        assert not isinstance(got, str)
        np.testing.assert_array_equal(np.asarray(got.input_ids, np.int64), want.input_ids)
        assert (got.rid, got.images, got.videos) == (want.rid, want.images, want.videos)


def test_natively_parsed_ids_take_the_common_case() -> None:
    body = json.dumps({"input_ids": list(range(100_000)), "images": ["a"]}).encode()
    got = server_app._parse_sliced(body)
    assert got is not None and not isinstance(got, str)
    np.testing.assert_array_equal(got.input_ids, np.arange(100_000))
    assert got.images == ["a"]


# -- SIGTERM -----------------------------------------------------------------------------------


def test_sigterm_during_an_upload_logs_one_line(fam: FamilySetup, tmp_path: Path) -> None:
    url, proc, stderr = start_serve_log(
        fam.spec(), tmp_path, "--shutdown-s", "1", "--deadline-s", "30"
    )
    try:
        sock = _connect(url)
        sock.sendall(b'POST /v1/preprocess HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"in')
        time.sleep(0.2)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert time.monotonic() - t < 1 + REJECT_S
        head, _ = _read_answer(sock)  # the cut-off upload is told why
        assert head.startswith(b"HTTP/1.1 503"), head
        sock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = stderr()
    _no_traceback(log)
    cut = [ln for ln in log.splitlines() if "was cut off" in ln]
    assert len(cut) == 1, log
    assert "WARNING" in cut[0], cut
    assert "shutdown: an upload in progress (4 bytes of 1000 read) was cut off" in cut[0], cut


def test_sigterm_under_storm_and_slow_connections(fam: FamilySetup, tmp_path: Path) -> None:
    """Trickling clients, a reset storm and clients posting in a loop, then SIGTERM: exit 0
    within the bound, every answer an exact 200 or a 503, and no traceback in the log."""
    shutdown_s = 2.0
    s = _serve(fam, tmp_path, "--shutdown-s", str(shutdown_s))
    request = _head(s.good) + s.good
    head_len = len(_head(s.good))
    verdicts: list[str] = []
    stop = threading.Event()

    def slow() -> None:
        while not stop.is_set():
            try:
                verdict = _verdict(*_trickle(s.url, request, head_len, 0.1), s.want)
            except OSError:
                verdict = "none"  # refused or reset: never answered
            verdicts.append(verdict)

    def poster(body: bytes, want: bytes) -> None:
        while not stop.is_set():
            try:
                with _connect(s.url) as sock:
                    sock.sendall(_head(body) + body)
                    verdict = _verdict(*_read_answer(sock), want)
            except OSError:
                verdict = "none"
            verdicts.append(verdict)

    storm = Storm(s.url, s.big)

    def storming() -> None:
        k = 0
        while not stop.is_set():
            storm.one(k)
            k += 1

    threads = [threading.Thread(target=slow) for _ in range(40)]
    threads += [threading.Thread(target=poster, args=(s.good, s.want)) for _ in range(4)]
    threads += [threading.Thread(target=poster, args=(s.big, s.want_big))]
    threads += [threading.Thread(target=storming) for _ in range(4)]
    try:
        with s.probe():
            for th in threads:
                th.start()
            end = time.monotonic() + 20
            while verdicts.count("200") < 100 and time.monotonic() < end:
                time.sleep(0.05)
        t = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(15) == 0
        took = time.monotonic() - t
        stop.set()
        for th in threads:
            th.join(60)
    finally:
        stop.set()
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
    counts = {v: verdicts.count(v) for v in set(verdicts)}
    assert set(counts) <= {"200", "503", "none"}, counts
    assert counts.get("200", 0) >= 100, counts
    assert took < 2 * shutdown_s + REJECT_S, f"shutdown took {took:.2f} s"
    _no_traceback(s.stderr())
