"""The compact form end to end: `process(compact=True)` against the full output, through
safetensors and .npz (`save_output` / `load_output`), and its size at 1080p."""

from __future__ import annotations

import io

import numpy as np
import pytest
from _qwen_refs import QWEN2, QWEN3, as_bits, noise
from test_qwen_pipeline import IMG, VE, VS, spec

from sglang_mm_core import CompactTensor, MmInput, load_output, pipeline_from_spec, save_output


def _jpeg(w: int, h: int, seed: int) -> bytes:
    buf = io.BytesIO()
    noise(w // 8, h // 8, seed=seed).resize((w, h)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _request(sizes: list[tuple[int, int]]) -> MmInput:
    images = [_jpeg(w, h, k) for k, (w, h) in enumerate(sizes)]
    prompt = [11] + [t for _ in images for t in (VS, IMG, VE, 12)]
    return MmInput(prompt, images)


def _assert_expands_to(compact_out, full_out) -> None:
    assert compact_out.hashes == full_out.hashes and compact_out.offsets == full_out.offsets
    np.testing.assert_array_equal(compact_out.input_ids, full_out.input_ids)
    for c, f in zip(compact_out.items, full_out.items, strict=True):
        assert isinstance(c.feature, CompactTensor)
        got = c.feature.expand()
        assert got.dtype == f.feature.dtype and got.shape == f.feature.shape
        np.testing.assert_array_equal(as_bits(got.array), as_bits(f.feature.array))
        np.testing.assert_array_equal(c.aux["image_grid_thw"].array, f.aux["image_grid_thw"].array)


@pytest.mark.parametrize("resample", ["pil", "aten_u8"])
@pytest.mark.parametrize("which", ["qwen2", "qwen3"])
def test_compact_round_trips_through_the_output_files(tmp_path, which, resample):
    params = QWEN2 if which == "qwen2" else QWEN3
    req = _request([(300, 200), (57, 83)])
    with pipeline_from_spec(spec(params, p={"resample": resample}, threads=2)) as pipe:
        full = pipe.process(req)
        compact = pipe.process(req, compact=True)
        batch = pipe.process_batch([req, req], compact=True)
    _assert_expands_to(compact, full)
    for out in batch:
        _assert_expands_to(out, full)
    save_output(compact, tmp_path / "out.safetensors")
    back = load_output((tmp_path / "out.safetensors").read_bytes())
    assert all(a.feature == b.feature for a, b in zip(back.items, compact.items, strict=True))
    _assert_expands_to(back, full)
    save_output(compact, tmp_path / "out.npz")
    _assert_expands_to(load_output(tmp_path / "out.npz"), full)


def test_qwen2_1080p_answer_is_at_most_a_seventh(tmp_path):
    req = _request([(1920, 1080)])
    with pipeline_from_spec(spec(QWEN2, threads=1)) as pipe:
        full = pipe.process(req)
        compact = pipe.process(req, compact=True)
    _assert_expands_to(compact, full)
    save_output(full, tmp_path / "full.safetensors")
    save_output(compact, tmp_path / "compact.safetensors")
    full_bytes = (tmp_path / "full.safetensors").stat().st_size
    compact_bytes = (tmp_path / "compact.safetensors").stat().st_size
    assert compact.items[0].feature.nbytes * 8 <= full.items[0].feature.array.nbytes + 8 * 3072
    assert compact_bytes * 7 <= full_bytes, (compact_bytes, full_bytes)


def test_cache_keeps_each_form_and_hits_give_the_miss_bits(tmp_path):
    """Each form asked for is its own entry: a hit of either is the cache-less answer's bits,
    in the stored (read-only) buffers, and goes through the safetensors and .npz writers."""
    req = _request([(300, 200), (57, 83)])
    with pipeline_from_spec(spec(QWEN2, threads=0)) as plain:
        full = plain.process(req)
        compact = plain.process(req, compact=True)
    with pipeline_from_spec({**spec(QWEN2, threads=0), "cache": {"max_bytes": 1 << 26}}) as pipe:
        miss = pipe.process(req, compact=True)
        miss_full = pipe.process(req)  # the compact entries do not answer a full request
        hit_full = pipe.process(req)
        hit_compact = pipe.process(req, compact=True)
        stats = pipe.cache_stats()
    f, c = stats.by_form["full"], stats.by_form["compact"]
    assert (f.misses, f.hits, f.entries, c.misses, c.hits, c.entries) == (2, 2, 2, 2, 2, 2)
    assert c.bytes == sum(it.feature.nbytes + 24 for it in miss.items)
    assert f.bytes == sum(it.feature.array.nbytes + 24 for it in full.items)
    _assert_expands_to(miss, full)
    _assert_expands_to(hit_compact, full)
    for got, stored, want in zip(hit_compact.items, miss.items, compact.items, strict=True):
        assert got.feature is stored.feature and not got.feature.codes.flags.writeable
        assert got.feature == want.feature
    for got, stored, want in zip(hit_full.items, miss_full.items, full.items, strict=True):
        assert got.feature is stored.feature and not got.feature.array.flags.writeable
        np.testing.assert_array_equal(as_bits(got.feature.array), as_bits(want.feature.array))
    for ext in ("safetensors", "npz"):
        save_output(hit_compact, tmp_path / f"compact.{ext}")
        _assert_expands_to(load_output(tmp_path / f"compact.{ext}"), full)
        save_output(hit_full, tmp_path / f"full.{ext}")
        for got, want in zip(load_output(tmp_path / f"full.{ext}").items, full.items, strict=True):
            np.testing.assert_array_equal(as_bits(got.feature.array), as_bits(want.feature.array))
