"""The compact form through the pipeline (both resamplers) and the output files: each item's
``expand()`` is the full feature bit for bit, after safetensors and .npz too; and the answer
of a 1080p image is at least 3.9x smaller (one byte per value instead of four, plus 3 KB of
tables)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from sglang_mm_core import CompactTensor, MmInput, MmOutput, load_output, pipeline_from_spec
from sglang_mm_core.outputs import encode_safetensors, save_output

PARAMS = [{}, {"longest_edge": 256}]
SIZES = [(300, 200), (57, 83), (1000, 90)]


def _jpeg(w: int, h: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    small = Image.fromarray(rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8))
    buf = io.BytesIO()
    small.resize((w, h)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _check(compact_out: MmOutput, full_out: MmOutput) -> None:
    assert compact_out.hashes == full_out.hashes and compact_out.offsets == full_out.offsets
    np.testing.assert_array_equal(compact_out.input_ids, full_out.input_ids)
    for c, f in zip(compact_out.items, full_out.items, strict=True):
        assert isinstance(c.feature, CompactTensor)
        got = c.feature.expand()
        assert got.dtype == "float32" and got.shape == f.feature.shape
        np.testing.assert_array_equal(got.array.view(np.uint32), f.feature.array.view(np.uint32))
        assert sorted(c.aux) == sorted(f.aux) and c.geometry == f.geometry
        for k in f.aux:
            np.testing.assert_array_equal(c.aux[k].array, f.aux[k].array)


def _body(out: MmOutput) -> bytes:
    return b"".join(bytes(c) for c in encode_safetensors(out))


@pytest.mark.parametrize("resample", ["pil", "aten_u8"])
@pytest.mark.parametrize("params", PARAMS, ids=[str(p) for p in PARAMS])
def test_compact_pipeline_and_output_files(tmp_path, resample, params):
    doc = {"family": "pixtral", "params": {**params, "resample": resample}, "threads": 2}
    with pipeline_from_spec(doc) as pipe:
        req = MmInput(pipe.family.example_prompt(3), [_jpeg(*s, k) for k, s in enumerate(SIZES)])
        full = pipe.process(req)
        compact = pipe.process(req, compact=True)
        batch = pipe.process_batch([req, req], compact=True)
    _check(compact, full)
    for out in batch:
        _check(out, full)  # type: ignore[arg-type]
    back = load_output(_body(compact))
    assert all(a.feature == b.feature for a, b in zip(back.items, compact.items, strict=True))
    _check(back, full)
    save_output(compact, tmp_path / "out.npz")
    _check(load_output(tmp_path / "out.npz"), full)


def test_1080p_answer_is_under_a_quarter_plus_tables():
    with pipeline_from_spec({"family": "pixtral", "threads": 1}) as pipe:
        req = MmInput(pipe.family.example_prompt(1), [_jpeg(1920, 1080, 9)])
        full = pipe.process(req)
        compact = pipe.process(req, compact=True)
    _check(compact, full)
    (c,), (f,) = compact.items, full.items
    assert c.feature.nbytes * 4 <= f.feature.array.nbytes + 4 * 3 * 256 * 4
    assert len(_body(compact)) * 3.9 <= len(_body(full)), (len(_body(compact)), len(_body(full)))
