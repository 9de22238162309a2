"""`temporal_smart_resize` against the references it stands for, live: transformers 5.23's
GLM-4.1V (``glm4v``), GLM-4.6V (``glm46v``) and Qwen3-VL video ``smart_resize`` functions,
over sizes around every branch (the upscale of a side under the factor with its ``int()``
truncation, the aspect-ratio limit, both budgets, ties of the rounding), image and video
frame counts; and the reference's errors as typed ones."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from transformers.models.glm4v.image_processing_pil_glm4v import smart_resize as glm4v_resize

from sglang_mm_core.plugin import KernelArgumentError, temporal_smart_resize

SIDES = [1, 2, 3, 13, 14, 27, 28, 29, 41, 42, 55, 56, 57, 111, 112, 113, 333, 1000]
SIDES += [1080, 1919, 1920, 3024, 4032, 5599, 5600, 9999]
# (temporal_factor, factor, min_pixels, max_pixels): GLM images and videos, Qwen3-VL videos,
# and bounds that make the min and max branches likely.
SETTINGS = [
    (2, 28, 112 * 112, 28 * 28 * 15000),
    (2, 28, 112 * 112, 28 * 28 * 2 * 30000),
    (2, 32, 128 * 32 * 32, 768 * 32 * 32),
    (2, 28, 200_000, 400_000),
    (1, 14, 50_000, 60_000),
    (4, 28, 3136, 12_845_056),
]


def _reference(n: int, h: int, w: int, tf: int, f: int, lo: int, hi: int) -> tuple[int, int]:
    return glm4v_resize(n, h, w, temporal_factor=tf, factor=f, min_pixels=lo, max_pixels=hi)


def _function_body(module: str) -> str:
    """The text of ``smart_resize``'s body in a transformers module's file (read, not
    imported: the video modules import torch)."""
    import transformers

    path = Path(transformers.__file__).parent / "models" / f"{module}.py"
    src = path.read_text()
    start = src.index("def smart_resize(")
    end = src.index("\n\n\n", start)
    body = src[start:end]
    return body[body.index("    if num_frames") :]


def test_the_references_are_one_function() -> None:
    """GLM's image and video modules and Qwen3-VL's video module hold the same body (their
    defaults differ only), so one function stands for all of them."""
    body = _function_body("glm4v/image_processing_pil_glm4v")
    for module in (
        "glm4v/image_processing_glm4v",
        "glm4v/video_processing_glm4v",
        "glm46v/image_processing_pil_glm46v",
        "glm46v/image_processing_glm46v",
        "glm46v/video_processing_glm46v",
        "qwen3_vl/video_processing_qwen3_vl",
    ):
        assert _function_body(module) == body, module


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_equal_to_transformers_over_the_branches(setting: tuple[int, int, int, int]) -> None:
    tf, f, lo, hi = setting
    seen = 0
    for h, w in itertools.product(SIDES, SIDES):
        for n in (tf, tf + 1, 2 * tf + 1, 48):
            try:
                want = _reference(n, h, w, tf, f, lo, hi)
            except ValueError as e:
                with pytest.raises(KernelArgumentError, match="aspect ratio"):
                    temporal_smart_resize(
                        n, h, w, temporal_factor=tf, factor=f, min_pixels=lo, max_pixels=hi
                    )
                assert "aspect ratio" in str(e)
                continue
            got = temporal_smart_resize(
                n, h, w, temporal_factor=tf, factor=f, min_pixels=lo, max_pixels=hi
            )
            assert got == want, (n, h, w)
            seen += 1
    assert seen > 1000


def test_random_sizes_equal_transformers() -> None:
    rng = np.random.default_rng(3)
    for _ in range(3000):
        h, w = (int(v) for v in rng.integers(1, 6000, 2))
        n = int(rng.integers(2, 200))
        if max(h, w) > 200 * min(h, w):
            continue
        want = _reference(n, h, w, 2, 28, 112 * 112, 28 * 28 * 2 * 30000)
        got = temporal_smart_resize(
            n, h, w, temporal_factor=2, factor=28, min_pixels=112 * 112, max_pixels=47_040_000
        )
        assert got == want, (n, h, w)


def test_the_upscale_truncates_as_the_reference() -> None:
    # 27x5000 scales by 28/27: 5000 * 28 / 27 = 5185.18.. -> 5185, ratio 185.2 (accepted);
    # 25x5000 would be 5600 / 28 = 200 exactly: accepted; 24x5000 is over.
    for h, w in [(27, 5000), (25, 5000), (1, 200), (3, 17), (13, 41)]:
        want = _reference(2, h, w, 2, 28, 112 * 112, 28 * 28 * 15000)
        got = temporal_smart_resize(
            2, h, w, temporal_factor=2, factor=28, min_pixels=112 * 112, max_pixels=11_760_000
        )
        assert got == want
    with pytest.raises(ValueError, match="aspect ratio"):
        _reference(2, 24, 5000, 2, 28, 112 * 112, 28 * 28 * 15000)
    with pytest.raises(KernelArgumentError, match=r"5000x24 .* aspect ratio 208"):
        temporal_smart_resize(
            2, 24, 5000, temporal_factor=2, factor=28, min_pixels=1, max_pixels=11_760_000
        )


def test_refusals_name_the_value() -> None:
    kw = {"temporal_factor": 2, "factor": 28, "min_pixels": 12544, "max_pixels": 11_760_000}
    with pytest.raises(ValueError, match="temporal_factor"):
        _reference(1, 64, 64, 2, 28, 12544, 11_760_000)
    with pytest.raises(KernelArgumentError, match=r"num_frames \(1\) .* temporal_patch_size"):
        temporal_smart_resize(1, 64, 64, **kw)
    with pytest.raises(ZeroDivisionError):
        _reference(2, 0, 64, 2, 28, 12544, 11_760_000)
    with pytest.raises(KernelArgumentError, match="64x0 pixels has a zero side"):
        temporal_smart_resize(2, 0, 64, **kw)
    with pytest.raises(KernelArgumentError, match="factor"):
        temporal_smart_resize(2, 64, 64, **{**kw, "factor": 0})
    with pytest.raises(KernelArgumentError, match="height must be a non-negative integer"):
        temporal_smart_resize(2, -3, 64, **kw)
    with pytest.raises(KernelArgumentError, match="width must be a non-negative integer"):
        temporal_smart_resize(2, 64, 1.5, **kw)  # type: ignore[arg-type]
