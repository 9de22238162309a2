"""`spec_from_hf`'s video params against the settings transformers' ``AutoVideoProcessor``
resolves for the same model directory (goldens of gen_video_settings_goldens.py, versions
recorded): where the settings are read from (a nested ``processor_config.json``, then
``video_preprocessor_config.json``, then the image processor's file), the per-frame pixel
bounds, the sampling (every frame, an fps or a frame count, the frame bounds) and the cap;
settings the family cannot honour are refused, naming the file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from sglang_mm_qwen_vl import QwenVLParams, spec_from_hf

from sglang_mm_core.errors import SpecError

GOLDENS = json.loads(
    (Path(__file__).parent / "fixtures" / "video_settings_goldens.json").read_text()
)
CASES = GOLDENS["cases"]


def test_goldens_record_their_reference() -> None:
    for key in ("torch", "torchvision", "transformers", "generator"):
        assert GOLDENS[key], key
    assert len(CASES) >= 10
    assert {c["resolved"]["class"] for c in CASES} == {
        "Qwen2VLVideoProcessor",
        "Qwen3VLVideoProcessor",
    }


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_video_params_are_what_hf_resolves(case: dict[str, Any]) -> None:
    want = case["resolved"]
    p = QwenVLParams.model_validate(spec_from_hf(case["files"])["params"])
    size = want["size"]
    assert (p.video_min_pixels, p.video_max_pixels) == (size["shortest_edge"], size["longest_edge"])
    if want["do_sample_frames"]:
        assert p.video_sampling == "hf"
        assert (p.video_fps, p.video_num_frames) == (want["fps"], want["num_frames"])
        assert (p.video_min_frames, p.video_max_frames) == (want["min_frames"], want["max_frames"])
        assert p.video_cap_pixels_per_frame == bool(want["cap_pixels_per_frame"])
    else:
        assert p.video_sampling == "none"
    assert (p.patch_size, p.merge_size, p.temporal_patch_size) == (
        want["patch_size"],
        want["merge_size"],
        want["temporal_patch_size"],
    )
    assert list(p.image_mean) == want["image_mean"] and list(p.image_std) == want["image_std"]


def _case(cid: str) -> dict[str, dict[str, Any]]:
    files: dict[str, dict[str, Any]] = copy.deepcopy(
        next(c for c in CASES if c["id"] == cid)["files"]
    )
    return files


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            {"patch_size": 14},
            "video_preprocessor_config.json: patch_size=14 differs from the image processor's 16",
        ),
        ({"image_mean": [0.4, 0.5, 0.5]}, "video_preprocessor_config.json: image_mean="),
        ({"num_frames": 8}, "num_frames=8 and fps=2.0 are both set"),
        (
            {"do_center_crop": True},
            "video_preprocessor_config.json: preprocessor setting do_center_crop",
        ),
        (
            {"frame_stride": 2},
            "video_preprocessor_config.json: preprocessor setting 'frame_stride'",
        ),
        ({"resample": 2}, "video_preprocessor_config.json:"),
    ],
)
def test_video_settings_that_cannot_be_honoured(edit: dict[str, Any], message: str) -> None:
    files = _case("qwen3-video-file")
    files["video_preprocessor_config.json"].update(edit)
    with pytest.raises(SpecError) as e:
        spec_from_hf(files)
    assert message in str(e.value)


def test_cap_with_another_token_budget_is_refused() -> None:
    files = _case("qwen2-video-file-cap")
    files["video_preprocessor_config.json"]["max_video_tokens"] = 1000
    with pytest.raises(SpecError, match="max_video_tokens=1000"):
        spec_from_hf(files)
