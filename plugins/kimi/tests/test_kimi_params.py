"""The spec's rules, each checked when the spec loads; the NaViT rule's truncations and caps."""

from __future__ import annotations

import pytest
from sglang_mm_kimi import KimiFamily, navit_size

import sglang_mm_core as mm


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"size": {"max_height": 512, "max_width": 256}}, "equal max_height and max_width"),
        ({"size": {"max_height": 512}}, "max_width"),
        ({"patch_size": 0}, "greater than or equal to 1"),
        ({"max_patches": 0}, "greater than or equal to 1"),
        ({"image_std": [0.5, 0.0, 0.5]}, "must not be zero"),
        ({"resample": "bicubic"}, "resample"),
        ({"generation": "k4"}, "generation"),
        ({"do_pad": True}, "Extra inputs are not permitted"),
    ],
)
def test_bad_params_fail_the_spec(params: dict[str, object], match: str) -> None:
    with pytest.raises(mm.SpecError, match=match):
        mm.pipeline_from_spec({"family": "kimi", "params": params})


def test_navit_truncates_caps_and_never_upscales() -> None:
    kw = {"patch_size": 14, "merge_size": 2, "max_patches": 16384, "max_size_per_side": 512}
    # Never upscaled: a small image keeps its size and only pads.
    s = navit_size(100, 60, **kw)
    assert (s.width, s.height, s.pad_width, s.pad_height) == (100, 60, 112, 84)
    # The budget: 4032x3024 has 288x216 patches; scale sqrt(16384/62208), sides truncated.
    s = navit_size(4032, 3024, **kw)
    assert (s.width, s.height) == (2069, 1551) and s.grid == (112, 148)
    # The per-side cap: 512 patches of 14 px, 7168 px, whatever the budget says.
    s = navit_size(20000, 1, **kw)
    assert (s.width, s.height, s.grid) == (7168, 1, (2, 512))
    # A side under one patch counts as one patch.
    assert navit_size(1, 1, **kw).grid == (2, 2)
    with pytest.raises(mm.KernelArgumentError, match="zero side"):
        navit_size(0, 5, **kw)


def test_an_odd_side_limit_is_refused_where_the_checkpoint_asserts() -> None:
    # 511 patches a side: a capped side pads to 512 patches, which the checkpoint's
    # navit_resize_image asserts against; transformers' class has no such check.
    fam = KimiFamily({"size": {"max_height": 511, "max_width": 511}})
    assert fam.plan(500, 500).content > 0
    with pytest.raises(mm.KernelArgumentError, match="per-side limit"):
        fam.plan(20000, 20)
    aten = KimiFamily({"resample": "aten_u8", "size": {"max_height": 511, "max_width": 511}})
    assert aten.plan(20000, 20).geometry.grid == (1, 2, 512)
