"""The compact form through the pipeline (both resamplers) and the output files: each item's
``expand()`` is the full feature bit for bit, in a batch and after safetensors and .npz too
(`compact_round_trips`); and the answer of a 1080p image is at least 3.9x smaller (one byte
per value instead of four, plus 3 KB of tables)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sglang_mm_core import MmInput, pipeline_from_spec, save_output
from sglang_mm_core.conformance import compact_round_trips

FAMILY = "pixtral"
PARAMS = [{}, {"longest_edge": 256}]
SIZES = [(300, 200), (57, 83), (1000, 90)]


def _jpeg(w: int, h: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    small = Image.fromarray(rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8))
    buf = io.BytesIO()
    small.resize((w, h)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


@pytest.mark.parametrize("resample", ["pil", "aten_u8"])
@pytest.mark.parametrize("params", PARAMS, ids=[str(p) for p in PARAMS])
def test_compact_pipeline_and_output_files(tmp_path: Path, resample: str, params: dict) -> None:
    doc = {"family": FAMILY, "params": {**params, "resample": resample}, "threads": 2}
    with pipeline_from_spec(doc) as pipe:
        req = MmInput(pipe.family.example_prompt(3), [_jpeg(*s, k) for k, s in enumerate(SIZES)])
        compact_round_trips(pipe, req, tmp_path)


def test_1080p_answer_is_under_a_quarter_plus_tables(tmp_path: Path) -> None:
    with pipeline_from_spec({"family": FAMILY, "threads": 1}) as pipe:
        req = MmInput(pipe.family.example_prompt(1), [_jpeg(1920, 1080, 9)])
        full = pipe.process(req)
        compact = compact_round_trips(pipe, req, tmp_path)
    (c,), (f,) = compact.items, full.items
    assert c.feature.nbytes * 4 <= f.feature.array.nbytes + 4 * 3 * 256 * 4
    sizes = []
    for name, out in (("compact", compact), ("full", full)):
        save_output(out, tmp_path / f"{name}.safetensors")
        sizes.append((tmp_path / f"{name}.safetensors").stat().st_size)
    assert sizes[0] * 3.9 <= sizes[1], sizes
