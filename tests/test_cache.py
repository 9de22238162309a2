"""The feature cache: a hit gives the bits of a miss, the byte cap evicts least recently used
entries, concurrent requests for one new image compute it once, and the key's fingerprint
moves with every param and decode option (and with nothing else)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import numpy as np
import pytest
from core_helpers import png_bytes
from sglang_mm_toy import ToyFamily

from sglang_mm_core import MmInput, Registry, pipeline_from_spec
from sglang_mm_core._spec import load_spec
from sglang_mm_core.conformance.images import generated_image
from sglang_mm_core.errors import SpecError


class CountingToy(ToyFamily):
    """The toy family, counting its computations; with ``hold_until_waits`` set, the first
    computation starts only once that many other requests wait for it."""

    name = "counting_toy"
    calls: ClassVar[list[int]] = []
    pipe: ClassVar[Any] = None
    hold_until_waits: ClassVar[int] = 0

    def kernel(self, image, plan, *, codes, threads):
        type(self).calls.append(1)
        deadline = time.monotonic() + 20
        while self.hold_until_waits and self.pipe.cache_stats().waits < self.hold_until_waits:
            assert time.monotonic() < deadline, "the other requests never waited"
            time.sleep(0.001)
        return super().kernel(image, plan, codes=codes, threads=threads)


@pytest.fixture
def counting() -> Registry:
    reg = Registry()
    reg.register_family(ToyFamily, CountingToy)
    CountingToy.calls = []
    CountingToy.hold_until_waits = 0
    return reg


def _req(*datas: bytes) -> MmInput:
    return MmInput([9] + [t for _ in datas for t in (5, 9)], list(datas))


def _png(seed: int, size: tuple[int, int] = (40, 24)) -> bytes:
    return png_bytes(generated_image(*size, seed=seed))


def test_hit_equals_miss(counting):
    spec = {"family": "counting_toy", "cache": {"max_bytes": 1 << 20}, "threads": 0}
    a, b = _png(1), _png(2)
    with pipeline_from_spec(spec, registry=counting) as pipe:
        miss = pipe.process(_req(a, b))
        hit = pipe.process(_req(b, a))
        stats = pipe.cache_stats()
    assert len(CountingToy.calls) == 2 and (stats.misses, stats.hits) == (2, 2)
    assert stats.entries == 2 and 0 < stats.bytes <= 1 << 20
    for got, want in ((hit.items[0], miss.items[1]), (hit.items[1], miss.items[0])):
        assert got.feature.dtype == want.feature.dtype
        np.testing.assert_array_equal(
            got.feature.array.view(np.uint8), want.feature.array.view(np.uint8)
        )
        assert got.hash == want.hash and got.geometry == want.geometry
    with pipeline_from_spec({"family": "counting_toy"}, registry=counting) as plain:
        assert plain.cache_stats() is None
        uncached = plain.process(_req(a, b))
    assert uncached.hashes == miss.hashes
    assert all(x.feature == y.feature for x, y in zip(uncached.items, miss.items, strict=True))


def test_byte_cap_evicts_least_recently_used(counting):
    one = len(
        pipeline_from_spec({"family": "toy"}, registry=counting)
        .process(_req(_png(0)))
        .items[0]
        .feature.array.tobytes()
    )
    spec = {"family": "counting_toy", "cache": {"max_bytes": 2 * one + one // 2}, "threads": 0}
    with pipeline_from_spec(spec, registry=counting) as pipe:
        for seed in (0, 1, 0, 2):  # 0 is used again before 2 arrives, so 1 goes
            pipe.process(_req(_png(seed)))
        s = pipe.cache_stats()
        assert (s.misses, s.hits, s.evictions, s.entries) == (3, 1, 1, 2)
        assert s.bytes <= s.max_bytes
        pipe.process(_req(_png(0)))
        assert pipe.cache_stats().hits == 2
        pipe.process(_req(_png(1)))
        assert pipe.cache_stats().misses == 4


def test_eight_threads_one_computation(counting):
    spec = {"family": "counting_toy", "cache": {"max_bytes": 1 << 20}, "threads": 8}
    data = _png(7)
    with pipeline_from_spec(spec, registry=counting) as pipe:
        CountingToy.pipe = pipe
        CountingToy.hold_until_waits = 7
        barrier = threading.Barrier(8)

        def run(_: int):
            barrier.wait()
            return pipe.process(_req(data))

        with ThreadPoolExecutor(8) as pool:
            outs = list(pool.map(run, range(8)))
        stats = pipe.cache_stats()
    assert len(CountingToy.calls) == 1
    assert (stats.misses, stats.waits) == (1, 7)
    assert all(o.items[0].feature == outs[0].items[0].feature for o in outs)


def test_fingerprint_covers_params_and_decode_only(counting):
    base: dict[str, Any] = {"family": "toy"}
    variants = [
        base,
        {**base, "params": {"patch": 9}},
        {**base, "params": {"image_token_id": 6}},
        {**base, "params": {"start_id": 7}},
        {**base, "params": {"end_id": 8}},
        {**base, "decode": {"alpha": "drop"}},
        {**base, "decode": {"exif_orientation": False}},
        {"family": "counting_toy"},
    ]
    prints = [load_spec(v, registry=counting).fingerprint for v in variants]
    assert len(set(prints)) == len(prints)
    same = [
        {**base, "cache": {"max_bytes": 10}},
        {**base, "threads": 3},
        {**base, "limits": {"max_items": 2}},
        {**base, "decode": {"alpha": "white"}},  # the toy's default, written out
    ]
    assert {load_spec(v, registry=counting).fingerprint for v in same} == {prints[0]}


@pytest.mark.parametrize("cache", [{"max_bytes": 0}, {}, {"max_bytes": 1, "x": 1}])
def test_bad_cache_options_are_spec_errors(counting, cache):
    with pytest.raises(SpecError, match="cache"):
        load_spec({"family": "toy", "cache": cache}, registry=counting)
