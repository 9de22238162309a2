"""The feature cache: a hit gives the bits of a miss, the byte cap evicts least recently used
entries, concurrent requests for one new image compute it once, and the key's fingerprint
moves with every param and decode option (and with nothing else). Each form asked for is kept
on its own (a full request hits a full entry, a compact one a compact entry), counted per form,
under the one byte bound, and a hit hands out the stored buffers themselves, read-only."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import numpy as np
import pytest
from core_helpers import png_bytes
from sglang_mm_toy import ToyFamily

from sglang_mm_core import CompactTensor, MmInput, MmOutput, Registry, Tensor, pipeline_from_spec
from sglang_mm_core._spec import load_spec
from sglang_mm_core.conformance.images import generated_image
from sglang_mm_core.errors import SpecError
from sglang_mm_core.plugin import ChannelPlanes, Features, Plan, Table


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


class TableToy(ToyFamily):
    """The toy's plan with a feature the core composes through a table: a family with a
    compact form (``[3, h, w]`` channel planes), counting its computations (its plans)."""

    name = "table_toy"
    plans: ClassVar[list[tuple[int, int]]] = []

    def features(self) -> Features:
        table = Table.hf((0.5, 0.25, 0.75), (0.25, 0.5, 0.125), "pil")
        return Features(table, ChannelPlanes(), resample="pil_bicubic")

    def plan(self, width: int, height: int) -> Plan:
        type(self).plans.append((width, height))
        return super().plan(width, height)


@pytest.fixture
def counting() -> Registry:
    reg = Registry()
    reg.register_family(ToyFamily, CountingToy, TableToy)
    CountingToy.calls = []
    CountingToy.hold_until_waits = 0
    TableToy.plans = []
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


def _arrays(out: MmOutput) -> list[np.ndarray]:
    """Every array an answer's items hand out: features (codes and tables) and aux."""
    got: list[np.ndarray] = []
    for it in out.items:
        f = it.feature
        got += [f.array] if isinstance(f, Tensor) else [f.codes, f.luts]
        got += [t.array for t in it.aux.values()]
    return got


def _assert_same_bits(got: MmOutput, want: MmOutput) -> None:
    assert got.hashes == want.hashes
    for g, w in zip(got.items, want.items, strict=True):
        assert type(g.feature) is type(w.feature) and g.geometry == w.geometry
        if isinstance(w.feature, Tensor):
            assert isinstance(g.feature, Tensor) and g.feature.dtype == w.feature.dtype
            np.testing.assert_array_equal(
                g.feature.array.view(np.uint8), w.feature.array.view(np.uint8)
            )
        else:
            assert isinstance(g.feature, CompactTensor) and g.feature == w.feature
            np.testing.assert_array_equal(g.feature.codes, w.feature.codes)
            np.testing.assert_array_equal(
                g.feature.luts.view(np.uint8), w.feature.luts.view(np.uint8)
            )
        assert g.aux.keys() == w.aux.keys()
        for k, t in w.aux.items():
            np.testing.assert_array_equal(g.aux[k].array, t.array)


def test_each_form_is_kept_counted_and_hit_on_its_own(counting):
    spec = {"family": "table_toy", "cache": {"max_bytes": 1 << 20}, "threads": 0}
    req = _req(_png(1), _png(2, (30, 50)))
    with pipeline_from_spec({"family": "table_toy", "threads": 0}, registry=counting) as plain:
        want_full, want_compact = plain.process(req), plain.process(req, compact=True)
    TableToy.plans = []
    with pipeline_from_spec(spec, registry=counting) as pipe:
        assert set(pipe.cache_stats().by_form) == {"full", "compact"}
        miss_full = pipe.process(req)
        assert len(TableToy.plans) == 2  # the full form computed from the bytes, once each
        miss_compact = pipe.process(req, compact=True)  # the full entries do not answer it
        assert len(TableToy.plans) == 4
        hits_full = [pipe.process(req) for _ in range(2)]
        hits_compact = [pipe.process(req, compact=True) for _ in range(2)]
        assert len(TableToy.plans) == 4  # no hit decodes or computes anything
        s = pipe.cache_stats()
    full, compact = s.by_form["full"], s.by_form["compact"]
    assert (full.misses, full.hits, full.waits, full.evictions, full.entries) == (2, 4, 0, 0, 2)
    assert (compact.misses, compact.hits, compact.entries) == (2, 4, 2)
    assert full.bytes == sum(it.feature.array.nbytes + 16 for it in want_full.items)
    assert compact.bytes == sum(it.feature.nbytes + 16 for it in want_compact.items)
    assert (s.hits, s.misses, s.entries, s.bytes) == (8, 4, 4, full.bytes + compact.bytes)
    for got in (miss_full, *hits_full):
        _assert_same_bits(got, want_full)
    for got in (miss_compact, *hits_compact):
        _assert_same_bits(got, want_compact)


@pytest.mark.parametrize("compact", [False, True])
def test_a_hit_hands_out_the_stored_buffers_read_only(counting, compact):
    spec = {"family": "table_toy", "cache": {"max_bytes": 1 << 20}, "threads": 0}
    req = _req(_png(3))
    with pipeline_from_spec(spec, registry=counting) as pipe:
        miss, hit, again = (pipe.process(req, compact=compact) for _ in range(3))
    assert miss.items[0].feature is hit.items[0].feature is again.items[0].feature
    for a, b, c in zip(_arrays(miss), _arrays(hit), _arrays(again), strict=True):
        assert a is b is c  # the very buffers, not copies
        assert np.shares_memory(a, b)
        assert not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a.flat[0] = a.flat[0]
    with pipeline_from_spec({**spec, "cache": None}, registry=counting) as plain:
        uncached = plain.process(req, compact=compact)
    assert _arrays(uncached)[0].flags.writeable  # without a cache, the feature is writable
    _assert_same_bits(again, uncached)


def test_both_forms_share_the_byte_bound(counting):
    base = {"family": "table_toy", "threads": 0}
    with pipeline_from_spec({**base, "cache": {"max_bytes": 1 << 20}}, registry=counting) as p:
        p.process(_req(_png(0)))
        p.process(_req(_png(0)), compact=True)
        one_full, one_compact = (p.cache_stats().by_form[f].bytes for f in ("full", "compact"))
    assert one_compact < one_full
    # Room for one full and one compact entry, not for a second compact one as well.
    cap = one_full + one_compact + one_compact // 2
    with pipeline_from_spec({**base, "cache": {"max_bytes": cap}}, registry=counting) as pipe:
        pipe.process(_req(_png(0)))  # full 0
        pipe.process(_req(_png(0)), compact=True)  # compact 0
        pipe.process(_req(_png(0)))  # full 0 used again: compact 0 is the least recent
        pipe.process(_req(_png(1)), compact=True)  # compact 1 evicts compact 0
        s = pipe.cache_stats()
        assert (s.by_form["compact"].evictions, s.by_form["full"].evictions) == (1, 0)
        assert (s.by_form["full"].entries, s.by_form["compact"].entries) == (1, 1)
        assert s.bytes == one_full + one_compact <= s.max_bytes
        pipe.process(_req(_png(2)))  # a second full entry: full 0, now the least recent, goes
        s = pipe.cache_stats()
    assert (s.by_form["compact"].evictions, s.by_form["full"].evictions, s.evictions) == (1, 1, 2)
    assert (s.by_form["full"].entries, s.by_form["compact"].entries) == (1, 1)
    assert s.bytes == one_full + one_compact


def test_single_flight_is_per_form(counting):
    spec = {"family": "table_toy", "cache": {"max_bytes": 1 << 20}, "threads": 8}
    data = _png(7)
    with pipeline_from_spec(spec, registry=counting) as pipe:
        barrier = threading.Barrier(8)

        def run(k: int) -> MmOutput:
            barrier.wait()
            return pipe.process(_req(data), compact=k % 2 == 1)

        with ThreadPoolExecutor(8) as pool:
            outs = list(pool.map(run, range(8)))
        s = pipe.cache_stats()
    assert len(TableToy.plans) == 2  # one computation per form
    for form in ("full", "compact"):
        f = s.by_form[form]
        assert f.misses == 1 and f.hits + f.waits == 3 and f.entries == 1
    assert all(o.items[0].feature is outs[k % 2].items[0].feature for k, o in enumerate(outs))


def test_a_family_without_compact_form_counts_only_full(counting):
    spec = {"family": "counting_toy", "cache": {"max_bytes": 1 << 20}, "threads": 0}
    with pipeline_from_spec(spec, registry=counting) as pipe:
        pipe.process(_req(_png(1)))
        pipe.process(_req(_png(1)))
        s = pipe.cache_stats()
    assert list(s.by_form) == ["full"]
    assert (s.by_form["full"].misses, s.by_form["full"].hits) == (1, 1)
