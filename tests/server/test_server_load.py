"""Load: 200 requests from 16 concurrent clients, mixed sizes, some malformed. Every valid one
is answered correctly (bit for bit), every bad one gets its 4xx, none is lost and none answered
twice; in embedded mode the host loop drains and answers every valid one exactly once."""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from srv_helpers import FamilySetup, HostLoop, assert_same_output

from sglang_mm_core import MmOutput
from sglang_mm_core.server import MmServer
from sglang_mm_core.server.codec import decode_safetensors, encode_safetensors

# A local Ray cluster, load or fuzzing: `make test` runs it, `make check` does not.
pytestmark = pytest.mark.slow

N_REQUESTS = 200
N_CLIENTS = 16

SHAPES: list[list[str]] = [
    [],
    ["jpeg_64x48"],
    ["png_56x56", "webp_100x60"],
    ["jpeg_200x150"],
    ["jpeg_120x90", "jpeg_64x48", "png_56x56"],
]


@dataclasses.dataclass
class Planned:
    idx: int
    rid: str
    body: bytes
    status: int  # expected
    kind: str | None  # expected error type
    want: MmOutput | None


def _data_url(data: bytes) -> str:
    return "data:;base64," + base64.b64encode(data).decode()


def plan(fam: FamilySetup, images: dict[str, bytes], prefix: str) -> list[Planned]:
    """200 requests: four of five valid (sizes cycling), the rest malformed in four ways."""
    want = {
        k: fam.pipeline.process(fam.request([images[n] for n in s])) for k, s in enumerate(SHAPES)
    }
    corrupt = _data_url(b"GIF89a broken" * 4)
    max_items = fam.pipeline.spec.spec.limits.max_items
    out = []
    for i in range(N_REQUESTS):
        rid = f"{prefix}-{i}"
        if i % 5 != 4:
            k = i % len(SHAPES)
            doc = {
                "rid": rid,
                "input_ids": fam.prompt(len(SHAPES[k])),
                "images": [_data_url(images[n]) for n in SHAPES[k]],
            }
            exp = dataclasses.replace(want[k], rid=rid)
            out.append(Planned(i, rid, json.dumps(doc).encode(), 200, None, exp))
            continue
        bad = (i // 5) % 4
        rid = f"bad-{rid}"
        if bad == 0:
            body = b'{"rid": "%s", "input_ids": [1, 2' % rid.encode()
            out.append(Planned(i, rid, body, 422, "ValidationError", None))
            continue
        if bad == 1:
            doc = {"rid": rid, "input_ids": fam.prompt(1), "images": [corrupt]}
            status, kind = 400, "DecodeError"
        elif bad == 2:
            doc = {
                "rid": rid,
                "input_ids": fam.prompt(2),
                "images": [_data_url(images["png_56x56"])],
            }
            status, kind = 400, "LayoutError"
        else:
            n = max_items + 1
            doc = {"rid": rid, "input_ids": fam.prompt(n), "images": ["aGk="] * n}
            status, kind = 413, "LimitError"
        out.append(Planned(i, rid, json.dumps(doc).encode(), status, kind, None))
    return out


def fire(url: str, planned: list[Planned]) -> dict[int, list[tuple[int, bytes, str]]]:
    """Post every planned request from 16 clients at once; every answer, by request index."""
    answers: dict[int, list[tuple[int, bytes, str]]] = {p.idx: [] for p in planned}
    lock = threading.Lock()
    chunks = [planned[k::N_CLIENTS] for k in range(N_CLIENTS)]

    def client(mine: list[Planned]) -> None:
        with requests.Session() as s:
            for p in mine:
                r = s.post(url, data=p.body, timeout=60)
                with lock:
                    answers[p.idx].append((r.status_code, r.content, r.headers.get("X-Format", "")))

    with ThreadPoolExecutor(N_CLIENTS) as pool:
        for f in [pool.submit(client, c) for c in chunks]:
            f.result()
    return answers


def check(planned: list[Planned], answers: dict[int, list[tuple[int, bytes, str]]]) -> None:
    assert len(answers) == N_REQUESTS
    for p in planned:
        got = answers[p.idx]
        assert len(got) == 1, f"request {p.idx} answered {len(got)} times"
        status, body, _ = got[0]
        assert status == p.status, (p.idx, body[:300])
        if p.want is not None:
            assert_same_output(decode_safetensors(body), p.want)
        else:
            assert json.loads(body)["error"]["type"] == p.kind


def _count(srv: MmServer, endpoint: str) -> float:
    text = requests.get(srv.url + "/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(f'sglang_mm_requests_total{{endpoint="{endpoint}"'):
            total += float(line.split()[-1])
    return total


@pytest.mark.parametrize("workers", [2])
def test_load_standalone_endpoint(
    fam: FamilySetup, images: dict[str, bytes], launch: Any, workers: int
) -> None:
    srv = launch(workers=workers, queue_size=N_REQUESTS)
    planned = plan(fam, images, "std")
    answers = fire(srv.url + "/v1/preprocess", planned)
    check(planned, answers)
    assert _count(srv, "/v1/preprocess") == N_REQUESTS  # one answer each, as the server saw it
    assert not srv.engine._live and srv.engine.queue_depth() == 0


def test_load_embedded_host_loop(fam: FamilySetup, images: dict[str, bytes], launch: Any) -> None:
    srv = launch(workers=2, queue_size=N_REQUESTS)
    planned = plan(fam, images, "emb")

    def answer(batch: Any, i: int) -> tuple[bytes, str]:
        body = b"".join(bytes(c) for c in encode_safetensors(batch.output(i)))
        return body, "application/octet-stream"

    with HostLoop(srv, answer, max_n=32) as host:
        answers = fire(srv.url + "/v1/submit", planned)
    assert not host.errors
    check(planned, answers)
    valid = {p.rid for p in planned if p.want is not None}
    drained = Counter(host.drained)
    assert set(drained) == valid  # no failed request ever reached the host
    assert set(drained.values()) == {1}  # each valid one drained exactly once
    assert all(ok for _, ok in host.pushed) and len(host.pushed) == len(valid)
    assert _count(srv, "/v1/submit") == N_REQUESTS
    assert not srv.engine._live and srv.engine.parked_count() == 0
