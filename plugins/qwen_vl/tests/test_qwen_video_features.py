"""``video_pixel_values`` against transformers' Qwen2-VL and Qwen3-VL video processors
(torchvision, which is what HF's video processors run), replayed from the goldens
``gen_video_goldens.py`` captured with torch (versions recorded): the same frames, the size
``video_sampling.hf_frame_size`` gives, and ``pixel_values_videos`` equal in every float32 bit
(its SHA-256), with the grid; odd frame counts repeat the last frame as HF does."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gen_video_goldens import frames
from sglang_mm_qwen_vl import QWEN2_VL, QWEN3_VL, QwenVLFamily
from sglang_mm_qwen_vl.video_features import video_pixel_values
from sglang_mm_qwen_vl.video_sampling import hf_frame_size

from sglang_mm_core.errors import KernelArgumentError

GOLDENS = json.loads((Path(__file__).parent / "fixtures" / "video_goldens.json").read_text())
CASES = GOLDENS["cases"]
PARAMS = {"qwen2": QWEN2_VL, "qwen3": QWEN3_VL}


def test_goldens_record_their_reference() -> None:
    for key in ("torch", "torchvision", "transformers", "generator"):
        assert GOLDENS[key], key
    assert len(CASES) >= 8


def _family(generation: str) -> QwenVLFamily:
    return QwenVLFamily({**PARAMS[generation], "resample": "aten_u8"})


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_pixel_values_videos_equal_hf(case: dict[str, Any]) -> None:
    t, h, w, seed, kind = case["frames"]
    video = frames(t, h, w, seed, kind)
    assert hashlib.sha256(video.tobytes()).hexdigest() == case["input_sha256"]
    size = hf_frame_size(h, w, t, generation=case["generation"])
    got, grid = video_pixel_values(iter(video), size, _family(case["generation"]))
    assert [list(grid)] == case["video_grid_thw"]
    assert list(got.shape) == case["shape"] and got.dtype == np.float32
    assert hashlib.sha256(got.tobytes()).hexdigest() == case["pixel_values_videos_sha256"]


def test_a_still_video_repeats_the_image_rows() -> None:
    """Two equal frames make the rows an image's own feature has (its still repeat)."""
    fam = _family("qwen2")
    img = frames(1, 64, 96, 9, "noise")[0]
    item = fam.process_item(img)
    h, w = item.geometry.height, item.geometry.width
    got, grid = video_pixel_values([img, img], (h, w), fam)
    np.testing.assert_array_equal(got, item.feature.array)
    assert grid == tuple(item.aux["image_grid_thw"].array[0])


def test_bad_sizes_and_empty_videos_are_refused() -> None:
    fam = _family("qwen2")
    with pytest.raises(KernelArgumentError, match="multiple of 28"):
        video_pixel_values([np.zeros((8, 8, 3), np.uint8)], (30, 56), fam)
    with pytest.raises(KernelArgumentError, match="at least one frame"):
        video_pixel_values([], (28, 28), fam)
