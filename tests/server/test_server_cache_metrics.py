"""The feature cache's Prometheus metrics, scraped from a real ``sglang-mm serve`` process on
127.0.0.1: hits, misses, waits and evictions count what the requests did, bytes and entries
what the cache holds; a server without a cache exports none of them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from srv_helpers import FamilySetup, data_url, make_image, start_serve

from sglang_mm_core import pipeline_from_spec
from sglang_mm_core.server import MmServer

CACHE_METRICS = ("hits_total", "misses_total", "waits_total", "evictions_total")
GAUGES = ("bytes", "entries", "max_bytes")


def _serve(spec: dict[str, Any], tmp: Path) -> tuple[str, subprocess.Popen[str]]:
    return start_serve(spec, tmp, "--workers", "2")


def _scrape(url: str) -> dict[str, float]:
    text = requests.get(url + "/metrics", timeout=10).text
    out = {}
    for line in text.splitlines():
        if line.startswith("sglang_mm_cache_"):
            name, value = line.split()
            out[name.removeprefix("sglang_mm_cache_")] = float(value)
    return out


@pytest.fixture(scope="module")
def entry_bytes(fam: FamilySetup) -> int:
    """What one 64x48 image's entry holds, measured in process (the server keeps the same)."""
    with pipeline_from_spec(fam.spec(cache={"max_bytes": 1 << 24}), registry=fam.registry) as p:
        p.process(fam.request([make_image(64, 48, "PNG", 40)]))
        stats = p.cache_stats()
    assert stats is not None and stats.entries == 1
    return stats.bytes


@pytest.fixture
def served(fam: FamilySetup, entry_bytes: int, tmp_path: Path) -> Iterator[tuple[str, FamilySetup]]:
    # Room for one entry, not two: the second new image evicts the first.
    url, proc = _serve(fam.spec(cache={"max_bytes": 2 * entry_bytes - 1}), tmp_path)
    try:
        yield url, fam
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _post(url: str, fam: FamilySetup, image: bytes) -> None:
    doc = {"input_ids": fam.prompt(1), "images": [data_url(image)]}
    resp = requests.post(url + "/v1/preprocess", data=json.dumps(doc), timeout=30)
    assert resp.status_code == 200, resp.text


def test_cache_counters_follow_the_requests(
    served: tuple[str, FamilySetup], entry_bytes: int
) -> None:
    url, fam = served
    a, b, c = (make_image(64, 48, "PNG", seed) for seed in (41, 42, 43))
    before = _scrape(url)
    assert before == {
        **{k: 0.0 for k in CACHE_METRICS},
        "bytes": 0.0,
        "entries": 0.0,
        "max_bytes": float(2 * entry_bytes - 1),
    }
    _post(url, fam, a)  # miss
    _post(url, fam, a)  # hit
    _post(url, fam, b)  # miss; storing it evicts a
    got = _scrape(url)
    assert {k: got[k] for k in CACHE_METRICS} == {
        "hits_total": 1.0,
        "misses_total": 2.0,
        "waits_total": 0.0,
        "evictions_total": 1.0,
    }
    assert (got["bytes"], got["entries"]) == (float(entry_bytes), 1.0)
    # Eight clients at once for one new image: one computation; each of the other seven
    # either waited for it (single flight) or came after it and hit.
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: _post(url, fam, c), range(8)))
    got = _scrape(url)
    assert got["misses_total"] == 3.0 and got["evictions_total"] == 2.0
    assert got["hits_total"] + got["waits_total"] == 1.0 + 7.0
    assert (got["bytes"], got["entries"]) == (float(entry_bytes), 1.0)
    text = requests.get(url + "/metrics", timeout=10).text
    assert "# TYPE sglang_mm_cache_hits_total counter" in text
    assert "# TYPE sglang_mm_cache_bytes gauge" in text


def test_no_cache_no_cache_metrics(fam: FamilySetup, server: MmServer) -> None:
    with requests.Session() as s:
        doc = {"input_ids": fam.prompt(1), "images": [data_url(make_image(30, 20, "PNG", 1))]}
        assert s.post(server.url + "/v1/preprocess", data=json.dumps(doc), timeout=30).ok
    assert _scrape(server.url) == {}
    assert server.engine.pipeline is not None and server.engine.pipeline.cache_stats() is None
