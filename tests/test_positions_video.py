"""MRoPE for prompts with videos (`mrope_positions(..., time_intervals=...)`) against
transformers 5.x's ``get_rope_index`` of Qwen2-VL and Qwen2.5-VL, replayed from goldens that
``tests/fixtures/video_rope/gen_video_rope.py`` captured with torch (versions recorded):
mixed images and videos, NTSC and fractional second-per-grid steps, videos whose ``t``
exceeds their ``h`` and ``w`` (where 5.x's rule for the text after a video differs from
4.x's), and a video that ends the prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sglang_mm_core.plugin import mrope_positions

GOLDENS = json.loads(
    (Path(__file__).parent / "fixtures" / "video_rope" / "video_rope_goldens.json").read_text()
)
CASES = GOLDENS["cases"]


def test_goldens_record_their_reference() -> None:
    for key in ("torch", "transformers", "generator", "reference"):
        assert GOLDENS[key], key
    assert len(CASES) >= 7


def _intervals(case: dict[str, Any], tokens_per_second: int | None) -> list[float | None]:
    """Qwen2.5-VL's step: ``tokens_per_second * second_per_grid_t`` in float32 (the
    processor's ``second_per_grid_ts`` is a float32 tensor); Qwen2-VL's: 1."""
    out: list[float | None] = []
    for s in case["seconds"]:
        if s is None:
            out.append(None)
        elif tokens_per_second is None:
            out.append(1.0)
        else:
            out.append(float(np.float32(tokens_per_second) * np.float32(s)))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
@pytest.mark.parametrize("model", ["qwen2_vl", "qwen2_5_vl_tps2", "qwen2_5_vl_tps25"])
def test_video_positions_equal_get_rope_index(case: dict[str, Any], model: str) -> None:
    tps = None if model == "qwen2_vl" else int(model.rsplit("tps", 1)[1])
    got = mrope_positions(
        case["length"],
        [tuple(o) for o in case["offsets"]],
        [tuple(g) for g in case["grids"]],
        time_intervals=_intervals(case, tps),
    )
    want = case[model]
    np.testing.assert_array_equal(got.positions, np.array(want["positions"], dtype=np.int64))
    assert got.delta == want["delta"]


def test_the_rule_after_a_long_video_is_5x() -> None:
    """After a video whose ``t`` exceeds its merged ``h`` and ``w``, the text goes on from
    ``max(h, w)``, not past the video's largest position (transformers 4.x)."""
    case = next(c for c in CASES if c["id"] == "long-video-small-frames")
    pos = np.array(case["qwen2_vl"]["positions"])
    start, end = case["offsets"][0]
    t, h, w = case["grids"][0]
    assert t > max(h, w)
    after = pos[:, end + 1]
    assert (after == pos[0, start] + max(h, w)).all()
    assert (after <= pos[:, start : end + 1].max()).all()  # overlaps the video's time axis


def test_images_only_agree_with_the_native_walk() -> None:
    offsets, grids = [(2, 5), (8, 13)], [(1, 2, 2), (1, 2, 3)]
    plain = mrope_positions(16, offsets, grids)
    timed = mrope_positions(16, offsets, grids, time_intervals=[None, None])
    assert plain == timed
