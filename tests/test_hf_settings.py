"""The readers `spec_from_hf` implementations share: `hf_channels` (a per-channel setting)
and `vision_geometry` (patch settings against ``config.json``'s ``vision_config``)."""

from __future__ import annotations

import pytest

from sglang_mm_core.plugin import SpecError, hf_channels, vision_geometry

CLIP = (0.48145466, 0.4578275, 0.40821073)


def test_hf_channels_reads_what_hf_accepts() -> None:
    assert hf_channels({}, "image_mean", CLIP) == CLIP
    assert hf_channels({"image_mean": None}, "image_mean", CLIP) == CLIP
    assert hf_channels({"image_mean": 0.5}, "image_mean", CLIP) == (0.5, 0.5, 0.5)
    assert hf_channels({"image_mean": 1}, "image_mean", CLIP) == (1.0, 1.0, 1.0)
    got = hf_channels({"image_std": [0.1, 0.2, 3]}, "image_std", CLIP)
    assert got == (0.1, 0.2, 3.0) and all(type(v) is float for v in got)


@pytest.mark.parametrize("bad", [[0.5, 0.5], [0.5, "a", 0.5], True, "0.5", {"r": 1}])
def test_hf_channels_refuses_the_rest_naming_the_key(bad: object) -> None:
    with pytest.raises(SpecError, match=r"image_mean=.* must be 3 numbers"):
        hf_channels({"image_mean": bad}, "image_mean", CLIP)


KEYS = {
    "patch_size": ("patch_size", 14),
    "merge_size": ("spatial_merge_size", 2),
    "temporal_patch_size": ("temporal_patch_size", 2),
}


def test_vision_geometry_takes_the_processor_and_checks_the_tower() -> None:
    cfg = {"vision_config": {"patch_size": 16, "spatial_merge_size": 2}}
    got = vision_geometry({"patch_size": 16, "temporal_patch_size": None}, cfg, KEYS)
    assert got == {"patch_size": 16, "merge_size": 2, "temporal_patch_size": 2}
    assert vision_geometry({}, {}, KEYS) == {
        "patch_size": 14,
        "merge_size": 2,
        "temporal_patch_size": 2,
    }
    with pytest.raises(SpecError, match=r"patch_size=14 disagrees .* vision_config patch_size=16"):
        vision_geometry({}, cfg, KEYS)
    with pytest.raises(SpecError, match=r"merge_size=4 disagrees.*spatial_merge_size=2"):
        vision_geometry({"patch_size": 16, "merge_size": 4}, cfg, KEYS)
    with pytest.raises(SpecError, match=r"patch_size='14' must be an integer"):
        vision_geometry({"patch_size": "14"}, {}, KEYS)
