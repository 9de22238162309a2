"""The JSON answer cap on a real server on 127.0.0.1 with a family that has a compact form:
a JSON answer over ``max_json_bytes`` is refused from its exact size before anything is
expanded or encoded (one 2048x2048 PNG took 6-8 s and +130-230 MB to be refused), and one
under it is the in-process answer bit for bit."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from PIL import Image

from sglang_mm_core import MmInput, pipeline_from_spec
from sglang_mm_core.client import request_body
from sglang_mm_core.server import MmServer
from sglang_mm_core.server.codec import decode_json

VS, VE, IMAGE = 151652, 151653, 151655
SPEC = {"family": "qwen_vl", "params": {"generation": "qwen2_vl"}}
MiB = 1 << 20


@pytest.fixture(autouse=True)
def _no_proxy(no_proxy: None) -> None:
    """Every test here talks to a server on 127.0.0.1."""


@pytest.fixture(scope="module")
def server() -> Iterator[MmServer]:
    srv = MmServer.launch(SPEC, "127.0.0.1:0", workers=1)  # max_json_bytes at its default
    yield srv
    srv.shutdown(timeout_s=10)


def _png(w: int, h: int) -> bytes:
    y, x = np.mgrid[0:h, 0:w]
    arr = np.stack([x % 256, y % 256, (x // 8 + y // 8) % 256], axis=-1).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG", optimize=True)
    return buf.getvalue()


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _prompt(n: int) -> list[int]:
    return [1] + [t for _ in range(n) for t in (VS, IMAGE, VE, 2)]


def test_an_answer_over_the_cap_is_refused_before_it_is_built(server: MmServer) -> None:
    png = _png(2048, 2048)
    body = request_body(MmInput(_prompt(1), [png]))
    good = request_body(MmInput(_prompt(1), [_png(64, 48)]))
    want = requests.post(f"{server.url}/v1/preprocess", data=good, timeout=30).content
    base, peak, health, stop = _rss_mb(), [0.0], [0.0], threading.Event()
    failures: list[int] = []

    def sample() -> None:  # RSS, and /health answering throughout
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_mb())
            t = time.monotonic()
            if (status := requests.get(f"{server.url}/health", timeout=5).status_code) != 200:
                failures.append(status)
            health[0] = max(health[0], time.monotonic() - t)
            stop.wait(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        t = time.monotonic()
        r = requests.post(f"{server.url}/v1/preprocess?format=json", data=body, timeout=60)
        took = time.monotonic() - t
    finally:
        stop.set()
        sampler.join()
    assert r.status_code == 413, r.text[:300]
    err = r.json()["error"]
    assert err["type"] == "LimitError" and err["fields"]["limit"] == "max_json_bytes"
    assert "would be at least" in err["message"] and "safetensors" in err["message"]
    assert err["fields"]["value"] > err["fields"]["limit_value"] == 128 * MiB
    assert len(r.content) < 2048
    assert took < 2.0, f"refused after {took:.2f} s"
    # The compact item (12.6 MB of codes) is all that is built; no float is expanded.
    assert peak[0] - base < 100, f"RSS grew {peak[0] - base:.0f} MB"
    assert not failures and health[0] < 1.0, f"/health {failures}, took {health[0]:.2f} s"
    after = requests.post(f"{server.url}/v1/preprocess", data=good, timeout=30)
    assert after.status_code == 200 and after.content == want


def test_an_answer_under_the_cap_is_the_in_process_one(server: MmServer) -> None:
    req = MmInput(_prompt(2), [_png(120, 90), _png(33, 61)])
    r = requests.post(f"{server.url}/v1/preprocess?format=json", data=request_body(req))
    assert r.status_code == 200, r.text[:300]
    got = decode_json(r.content)
    with pipeline_from_spec(SPEC) as pipe:
        want = pipe.process(req)
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    for g, w in zip(got.items, want.items, strict=True):
        assert g.feature.dtype == w.feature.dtype == "float32"
        np.testing.assert_array_equal(
            g.feature.array.view(np.uint32), w.feature.array.view(np.uint32)
        )
        np.testing.assert_array_equal(g.aux["image_grid_thw"].array, w.aux["image_grid_thw"].array)
