"""``resample: "pil"`` against HF's ``Glm4vImageProcessorPil`` and ``Glm46VImageProcessorPil``
(live, the installed transformers), bit for bit: the same decoded image into both,
``pixel_values`` compared as float32 bits (the compact form too, which expands to it),
``image_grid_thw`` exactly. The photo corpus, the temporal-aware resize's edge cases (a side
under 28 upscaled with ``int()`` truncation, the aspect-ratio limit after it, both budgets),
the class's and the checkpoints' ``size``, other bounds, threads, and the core's decode modes
(alpha, gray, palette, EXIF orientation, 16-bit PNG) through the pipeline."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from _glm4v_refs import (
    CLASS_SIZE,
    PHOTOS,
    SHIPPED_SIZE,
    as_bits,
    encode,
    hf_image_processor,
    hf_pixels,
    hf_rgb,
    noise,
    photo,
)
from PIL import Image
from sglang_mm_glm4v import Glm4vFamily

import sglang_mm_core as mm
from sglang_mm_core.conformance import process_item_and_compact


def _params(size: dict[str, int], **kw: Any) -> dict[str, Any]:
    return {
        "resample": "pil",
        "min_pixels": size["shortest_edge"],
        "max_pixels": size["longest_edge"],
        **kw,
    }


def _assert_same(
    image: Image.Image,
    model_type: str = "glm4v",
    size: dict[str, int] = SHIPPED_SIZE,
    threads: int = 1,
    **hf_kw: Any,
) -> tuple[int, int, int]:
    want_pv, want_grid = hf_pixels(hf_image_processor(model_type, size=size, **hf_kw), image)
    ours = {k: tuple(v) if isinstance(v, list) else v for k, v in hf_kw.items()}
    fam = Glm4vFamily(_params(size, **ours))
    item = process_item_and_compact(fam, np.asarray(image), threads=threads)
    got = item.feature.array
    assert got.shape == want_pv.shape and got.dtype == np.float32
    np.testing.assert_array_equal(as_bits(got), as_bits(want_pv))
    np.testing.assert_array_equal(item.aux["image_grid_thw"].array, want_grid)
    t, gh, gw = (int(v) for v in want_grid[0])
    return t, gh, gw


@pytest.mark.parametrize("model_type", ["glm4v", "glm46v"])
@pytest.mark.parametrize("name", PHOTOS)
def test_photos(name: str, model_type: str) -> None:
    _assert_same(photo(name), model_type)


@pytest.mark.parametrize("size", [SHIPPED_SIZE, CLASS_SIZE], ids=["shipped", "class"])
def test_a_12mp_photo_at_both_sizes(size: dict[str, int]) -> None:
    """Large enough to hit the pixel budget: 2 x h x w over longest_edge scales down."""
    _, gh, gw = _assert_same(noise(4032, 3024, seed=3), size=size)
    assert 2 * gh * gw * 14 * 14 <= size["longest_edge"]


# Sizes around the rule's branches: a side under 28 upscaled (with the int() truncation of the
# other side), the aspect-ratio limit after the upscale (1x200 -> 28x5600: exactly 200), tiny
# images raised to the minimum, sides on and one off multiples of 28, budget boundaries.
EDGE = [(1, 1), (2, 1), (1, 200), (200, 1), (27, 5000), (25, 5000), (13, 41), (3, 17)]
EDGE += [(28, 28), (56, 56), (55, 57), (83, 84), (111, 113), (5600, 28), (28, 5599)]
EDGE += [(1920, 1080), (1080, 1920), (2200, 2200), (2201, 2199), (499, 2000)]


@pytest.mark.parametrize("wh", EDGE, ids=lambda wh: f"{wh[0]}x{wh[1]}")
def test_edge_sizes(wh: tuple[int, int]) -> None:
    _assert_same(noise(*wh, seed=wh[0] * 31 + wh[1]))


@pytest.mark.parametrize(
    "size",
    [
        {"shortest_edge": 200_000, "longest_edge": 400_000},  # the min branch is common
        {"shortest_edge": 3136, "longest_edge": 100_352},  # the max branch is common
        {"shortest_edge": 12544, "longest_edge": 12544},  # one pixel count
    ],
    ids=["high-min", "low-max", "equal"],
)
@pytest.mark.parametrize("wh", [(640, 480), (33, 900), (3000, 31), (1, 1)])
def test_other_bounds(size: dict[str, int], wh: tuple[int, int]) -> None:
    _assert_same(noise(*wh, seed=wh[0] + wh[1]), size=size)


def test_other_geometry_and_normalization() -> None:
    img = noise(700, 300, seed=4)
    _assert_same(img, patch_size=16, merge_size=2, temporal_patch_size=2)
    _assert_same(img, merge_size=1, temporal_patch_size=3)
    _assert_same(img, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])


def test_threads_do_not_change_bits() -> None:
    _assert_same(noise(1023, 511, seed=5), threads=3)


def _exif_jpeg(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encode(noise(90, 40, seed=orientation), "JPEG", quality=90, exif=exif.tobytes())


def _png16() -> bytes:
    rng = np.random.default_rng(2)
    return encode(Image.fromarray(rng.integers(0, 65536, (37, 51), dtype=np.uint16)), "PNG")


CASES = {
    "rgba": encode(Image.fromarray(np.asarray(noise(130, 70, 1).convert("RGBA")), "RGBA")),
    "la": encode(noise(60, 90, 2).convert("LA")),
    "gray": encode(noise(60, 90, 3).convert("L")),
    "palette-transparency": encode(noise(64, 48, 4).convert("P"), transparency=5),
    "gray16": _png16(),
    "exif-rotate-90": _exif_jpeg(6),
    "exif-mirror": _exif_jpeg(2),
    "webp": encode(noise(100, 80, 6), "WEBP", quality=80),
    "gif": encode(noise(50, 30, 7).convert("P"), "GIF"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_decoded_bytes_through_the_pipeline(case: str) -> None:
    """The core decodes with the family's defaults (alpha on white, EXIF applied, as HF's
    ``load_image`` + ``convert_to_rgb``); HF is fed what its loaders make of the same bytes."""
    data = CASES[case]
    want_pv, want_grid = hf_pixels(hf_image_processor(), hf_rgb(Image.open(io.BytesIO(data))))
    spec = {"family": "glm4v", "params": {"resample": "pil"}}
    with mm.pipeline_from_spec(spec) as pipe:
        out = pipe.process(mm.MmInput(input_ids=[5, 151339, 151343, 151340, 6], images=[data]))
    (item,) = out.items
    np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(want_pv))
    np.testing.assert_array_equal(item.aux["image_grid_thw"].array, want_grid)


def test_backends_differ_where_the_references_do() -> None:
    """Pillow's and torchvision's bicubic differ on a real downscale, so the two modes are not
    silently one kernel (the aten_u8 bits are proven by the goldens)."""
    arr = np.asarray(noise(1920, 1080, seed=6))
    a = Glm4vFamily({"resample": "pil"}).process_item(arr).feature.array
    b = Glm4vFamily({"resample": "aten_u8"}).process_item(arr).feature.array
    assert a.shape == b.shape and not np.array_equal(a, b)
