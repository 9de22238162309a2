"""The compact form through the pipeline and the output files, and its size at 1080p."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sglang_mm_core import CompactTensor, MmInput, load_output, pipeline_from_spec, save_output

TOK = 200054


def _jpeg(w: int, h: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    small = Image.fromarray(rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8))
    buf = io.BytesIO()
    small.resize((w, h)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _check(compact_out, full_out) -> None:
    assert compact_out.hashes == full_out.hashes
    for c, f in zip(compact_out.items, full_out.items, strict=True):
        assert isinstance(c.feature, CompactTensor)
        got = c.feature.expand()
        assert got.dtype == "bfloat16" and got.shape == f.feature.shape
        np.testing.assert_array_equal(got.array, f.feature.array)


@pytest.mark.parametrize(
    "params", [{}, {"rescale_image_frac": 0.5}, {"patch_size": 14, "temporal_patch_size": 1}]
)
def test_compact_pipeline_and_safetensors(params, tmp_path: Path):
    images = [_jpeg(90, 61, 1), _jpeg(41, 7, 2)]
    req = MmInput([5, TOK, 6, TOK, 7], images)
    with pipeline_from_spec({"family": "inkling", "params": params, "threads": 2}) as pipe:
        full = pipe.process(req)
        compact = pipe.process(req, compact=True)
    _check(compact, full)
    save_output(compact, tmp_path / "compact.safetensors")
    back = load_output(tmp_path / "compact.safetensors")
    _check(back, full)


def test_inkling_1080p_answer_is_at_most_two_sevenths(tmp_path: Path):
    req = MmInput([5, TOK, 6], [_jpeg(1920, 1080, 3)])
    with pipeline_from_spec({"family": "inkling", "threads": 1}) as pipe:
        full = pipe.process(req)
        compact = pipe.process(req, compact=True)
    _check(compact, full)
    sizes = []
    for name, out in (("full", full), ("compact", compact)):
        save_output(out, tmp_path / f"{name}.safetensors")
        sizes.append((tmp_path / f"{name}.safetensors").stat().st_size)
    full_bytes, compact_bytes = sizes
    assert compact_bytes * 3.5 <= full_bytes, (compact_bytes, full_bytes)
