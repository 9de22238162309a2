"""The feature cache's Prometheus metrics, scraped from real servers on 127.0.0.1 (a
``sglang-mm serve`` process, an embedded server): hits, misses, waits and evictions count what
the requests did, per form (``full``; ``compact`` for a family that offers it), bytes and
entries what the cache holds per form; a hit answers the bits of a cache-less pipeline in
either form and either body format; a server without a cache exports none of them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from sglang_mm_toy import ToyFamily
from srv_helpers import FamilySetup, data_url, make_image, start_serve
from test_cache import TableToy  # the toy family with a compact form (tests/test_cache.py)

from sglang_mm_core import CompactTensor, MmInput, MmOutput, Registry, pipeline_from_spec
from sglang_mm_core.client import Client
from sglang_mm_core.server import MmServer

COUNTERS = ("hits_total", "misses_total", "waits_total", "evictions_total")


def _full(name: str) -> str:
    return f'{name}{{form="full"}}'


def _serve(spec: dict[str, Any], tmp: Path) -> tuple[str, subprocess.Popen[str]]:
    return start_serve(spec, tmp, "--workers", "2")


def _scrape(url: str) -> dict[str, float]:
    """The cache's samples by name and labels, e.g. ``hits_total{form="full"}``."""
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
    # The toy family has no compact form: only the full series exist.
    assert before == {
        **{_full(k): 0.0 for k in COUNTERS},
        _full("bytes"): 0.0,
        _full("entries"): 0.0,
        "max_bytes": float(2 * entry_bytes - 1),
    }
    _post(url, fam, a)  # miss
    _post(url, fam, a)  # hit
    _post(url, fam, b)  # miss; storing it evicts a
    got = _scrape(url)
    assert {k: got[_full(k)] for k in COUNTERS} == {
        "hits_total": 1.0,
        "misses_total": 2.0,
        "waits_total": 0.0,
        "evictions_total": 1.0,
    }
    assert (got[_full("bytes")], got[_full("entries")]) == (float(entry_bytes), 1.0)
    # Eight clients at once for one new image: one computation; each of the other seven
    # either waited for it (single flight) or came after it and hit.
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: _post(url, fam, c), range(8)))
    got = _scrape(url)
    assert got[_full("misses_total")] == 3.0 and got[_full("evictions_total")] == 2.0
    assert got[_full("hits_total")] + got[_full("waits_total")] == 1.0 + 7.0
    assert (got[_full("bytes")], got[_full("entries")]) == (float(entry_bytes), 1.0)
    text = requests.get(url + "/metrics", timeout=10).text
    assert "# TYPE sglang_mm_cache_hits_total counter" in text
    assert "# TYPE sglang_mm_cache_bytes gauge" in text
    assert "# TYPE sglang_mm_cache_max_bytes gauge" in text


def _assert_bits(got: MmOutput, want: MmOutput) -> None:
    """The items' arrays equal bit for bit (a compact feature as its codes and tables)."""
    assert got.hashes == want.hashes and got.offsets == want.offsets
    np.testing.assert_array_equal(got.input_ids, want.input_ids)
    for g, w in zip(got.items, want.items, strict=True):
        assert g.geometry == w.geometry and sorted(g.aux) == sorted(w.aux)
        if isinstance(w.feature, CompactTensor):
            assert isinstance(g.feature, CompactTensor) and g.feature == w.feature
            np.testing.assert_array_equal(g.feature.codes, w.feature.codes)
        else:
            assert g.feature.dtype == w.feature.dtype
            np.testing.assert_array_equal(g.feature.array, w.feature.array)
        for k in w.aux:
            np.testing.assert_array_equal(g.aux[k].array, w.aux[k].array)


def test_both_forms_hit_over_the_server_with_the_uncached_bits(launch: Any) -> None:
    registry = Registry()
    registry.register_family(ToyFamily, TableToy)
    doc: dict[str, Any] = {"family": "table_toy", "threads": 0}
    req = MmInput([9, 5, 9, 5, 9], [make_image(64, 48, "PNG", 51), make_image(30, 50, "JPEG", 52)])
    with pipeline_from_spec(doc, registry=registry) as plain:
        want_full, want_compact = plain.process(req), plain.process(req, compact=True)
    srv = launch({**doc, "cache": {"max_bytes": 1 << 22}}, registry=registry, workers=2)
    before = _scrape(srv.url)
    assert {k: v for k, v in before.items() if k != "max_bytes"} == {
        f'{name}{{form="{form}"}}': 0.0
        for name in (*COUNTERS, "bytes", "entries")
        for form in ("compact", "full")
    }
    with Client(srv.url) as client:
        answers = {
            (fmt, compact, k): client.preprocess(req, fmt=fmt, compact=compact)
            for k in range(2)  # the first safetensors answer of each form is its miss
            for fmt in ("safetensors", "json")
            for compact in (False, True)
        }
    for (fmt, compact, _), got in answers.items():
        if compact and fmt == "json":  # the JSON form sends a compact feature expanded
            _assert_bits(got, want_full)
        else:
            _assert_bits(got, want_compact if compact else want_full)
    got = _scrape(srv.url)
    # A JSON answer is built from the compact form where the family has one, so only the
    # safetensors answers without ?compact=1 ask for the full form: 2 of the 8 answers.
    for form, hits in (("full", 2.0), ("compact", 10.0)):
        assert got[f'misses_total{{form="{form}"}}'] == 2.0  # two images, once each
        assert got[f'hits_total{{form="{form}"}}'] == hits  # the other answers, 2 items each
        assert got[f'entries{{form="{form}"}}'] == 2.0
        assert got[f'waits_total{{form="{form}"}}'] == 0.0
    assert got['bytes{form="full"}'] == sum(it.feature.array.nbytes + 16 for it in want_full.items)
    assert got['bytes{form="compact"}'] == sum(it.feature.nbytes + 16 for it in want_compact.items)
    assert got["max_bytes"] == float(1 << 22)


def test_no_cache_no_cache_metrics(fam: FamilySetup, server: MmServer) -> None:
    with requests.Session() as s:
        doc = {"input_ids": fam.prompt(1), "images": [data_url(make_image(30, 20, "PNG", 1))]}
        assert s.post(server.url + "/v1/preprocess", data=json.dumps(doc), timeout=30).ok
    assert _scrape(server.url) == {}
    assert server.engine.pipeline is not None and server.engine.pipeline.cache_stats() is None
