"""`pil_lanczos` / `pil_bicubic` / `pil_bilinear` against Pillow's own `Image.resize` (the
installed Pillow 13), bit for bit: seeded random sizes, edge shapes, both pass orders, real
photos, thread counts."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.data
from PIL import Image

from sglang_mm_core.common import resize_rgb
from sglang_mm_core.errors import KernelArgumentError

FILTERS = {
    "pil_lanczos": Image.Resampling.LANCZOS,
    "pil_bicubic": Image.Resampling.BICUBIC,
    "pil_bilinear": Image.Resampling.BILINEAR,
}


def pillow(img: np.ndarray, ow: int, oh: int, resample: str, order: str) -> np.ndarray:
    """The reference: Pillow 13's resize, or Pillow 12's always-horizontal-first order built as
    a width-only resize followed by a height-only one."""
    im = Image.fromarray(img)
    f = FILTERS[resample]
    if order == "pillow12":
        im = im.resize((ow, im.height), f)
    return np.asarray(im.resize((ow, oh), f))


def vertical_first(w: int, h: int, ow: int, oh: int) -> bool:
    return h - oh > 0 and h - oh > 2 * (w - ow)


def noise(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _random_sizes(n: int) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(20261130)
    sizes = []
    for _ in range(n):
        w, h = (int(v) for v in rng.integers(1, 160, 2))
        # Mix downscales, upscales and mixed-direction resizes.
        ow, oh = (int(v) for v in rng.integers(1, 240, 2))
        sizes.append((w, h, ow, oh))
    return sizes


EDGE_SIZES = [
    (17, 11, 17, 11),  # identity
    (40, 30, 1, 1),
    (40, 30, 1, 30),
    (40, 30, 40, 1),
    (1, 1, 9, 5),
    (1, 60, 1, 7),  # 1xN
    (60, 1, 7, 1),  # Nx1
    (1, 60, 5, 13),
    (2000, 3, 4, 3),  # ratio 500 along one axis
    (3, 1500, 2, 5),
    (600, 400, 7, 5),  # ratio ~86 on both axes
    (3, 2, 300, 150),  # upscale x100
    (50, 100, 45, 51),  # vertical first: 49 > 2 * 5
    (50, 100, 30, 51),  # horizontal first: 49 > 40 but the width shrinks more than half as much
    (50, 101, 26, 53),  # boundary: 48 == 2 * 24 -> horizontal first
    (50, 102, 26, 53),  # boundary: 49 > 48 -> vertical first
    (40, 90, 80, 30),  # width grows, height shrinks: vertical first
    (90, 40, 30, 80),  # width shrinks, height grows: horizontal first
]


@pytest.mark.parametrize("resample", sorted(FILTERS))
@pytest.mark.parametrize("order", ["pillow13", "pillow12"])
@pytest.mark.parametrize("size", EDGE_SIZES + _random_sizes(40), ids=str)
def test_matches_pillow(size: tuple[int, int, int, int], order: str, resample: str) -> None:
    w, h, ow, oh = size
    img = noise(w, h, seed=w * 7919 + h)
    want = pillow(img, ow, oh, resample, order)
    got = resize_rgb(img, ow, oh, resample, pass_order=order)  # type: ignore[arg-type]
    assert got.shape == (oh, ow, 3) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_edge_sizes_cover_both_pillow13_orders() -> None:
    both_axes = [s for s in EDGE_SIZES if s[0] != s[2] and s[1] != s[3]]
    assert {vertical_first(*s) for s in both_axes} == {True, False}
    # ... and the orders really differ on them, so the tests above tell them apart.
    differ = [
        s
        for s in both_axes
        if not np.array_equal(
            pillow(noise(s[0], s[1], 1), s[2], s[3], "pil_bicubic", "pillow13"),
            pillow(noise(s[0], s[1], 1), s[2], s[3], "pil_bicubic", "pillow12"),
        )
    ]
    assert any(vertical_first(*s) for s in differ)


def test_high_contrast_overshoot_is_clamped() -> None:
    stripes = np.zeros((64, 64, 3), dtype=np.uint8)
    stripes[:, ::2] = 255
    stripes[::3, :, 1] = 255
    for resample in FILTERS:
        for ow, oh in [(27, 45), (150, 130)]:
            want = pillow(stripes, ow, oh, resample, "pillow13")
            got = resize_rgb(stripes, ow, oh, resample)  # type: ignore[arg-type]
            np.testing.assert_array_equal(got, want)


PHOTOS = ["astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "retina"]


@pytest.mark.parametrize("name", PHOTOS)
@pytest.mark.parametrize("resample", sorted(FILTERS))
def test_real_photos(name: str, resample: str) -> None:
    img = np.ascontiguousarray(getattr(skimage.data, name)()[:, :, :3])
    h, w = img.shape[:2]
    for ow, oh in [(448, 448), (w // 3, h // 3), (w * 3 // 2, h * 5 // 4), (w, h // 2)]:
        for order in ("pillow13", "pillow12"):
            want = pillow(img, ow, oh, resample, order)
            got = resize_rgb(img, ow, oh, resample, pass_order=order, threads=2)  # type: ignore[arg-type]
            np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def photo_12mp() -> np.ndarray:
    """A 4032x3024 photograph: skimage's coffee, enlarged by Pillow's Lanczos."""
    coffee = Image.fromarray(skimage.data.coffee())
    return np.asarray(coffee.resize((4032, 3024), Image.Resampling.LANCZOS))


@pytest.mark.parametrize("resample", sorted(FILTERS))
@pytest.mark.parametrize("out", [(1288, 966), (966, 1288), (1288, 300), (300, 966)], ids=str)
def test_large_downscale_of_12mp_photo(
    photo_12mp: np.ndarray, resample: str, out: tuple[int, int]
) -> None:
    ow, oh = out
    for order in ("pillow13", "pillow12"):
        want = pillow(photo_12mp, ow, oh, resample, order)
        for threads in (0, 1, 2, 4):
            got = resize_rgb(photo_12mp, ow, oh, resample, pass_order=order, threads=threads)  # type: ignore[arg-type]
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("resample", [*FILTERS, "aten_u8", "aten_u8_bilinear"])
def test_thread_counts_are_bit_identical(resample: str) -> None:
    for w, h, ow, oh in [(257, 190, 123, 401), (1000, 700, 333, 77), (31, 900, 29, 100)]:
        img = noise(w, h, seed=3)
        outs = [resize_rgb(img, ow, oh, resample, threads=t) for t in (0, 1, 2, 4, 7)]  # type: ignore[arg-type]
        for out in outs[1:]:
            np.testing.assert_array_equal(out, outs[0])


def test_input_is_not_modified() -> None:
    img = noise(50, 40, seed=9)
    before = img.copy()
    resize_rgb(img, 20, 70, "pil_lanczos", threads=2)
    np.testing.assert_array_equal(img, before)


@pytest.mark.parametrize(
    ("arr", "ow", "oh", "kwargs", "words"),
    [
        (noise(10, 10, 0), 0, 5, {}, "at least 1x1"),
        (noise(10, 10, 0), 5, 0, {}, "at least 1x1"),
        (noise(10, 10, 0), 100_000, 100_000, {}, "exceeds the cap"),
        (noise(10, 10, 0), 70_000, 1, {}, "exceeds the cap"),
        (noise(10, 10, 0)[:, ::2], 5, 5, {}, "contiguous"),
        (np.zeros((10, 10, 4), np.uint8), 5, 5, {}, "[h, w, 3]"),
        (np.zeros((0, 10, 3), np.uint8), 5, 5, {}, "empty"),
        (noise(10, 10, 0), 5, 5, {"resample": "nearest"}, "unknown resample"),
        (noise(10, 10, 0), 5, 5, {"pass_order": "pillow11"}, "unknown pass order"),
    ],
)
def test_bad_arguments_are_typed_errors(
    arr: np.ndarray, ow: int, oh: int, kwargs: dict[str, str], words: str
) -> None:
    with pytest.raises(KernelArgumentError, match=words.replace("[", r"\[").replace("]", r"\]")):
        resize_rgb(arr, ow, oh, **kwargs)  # type: ignore[arg-type]


def test_huge_intermediate_is_refused_before_allocation() -> None:
    # Pillow 12's order would widen a 1x60000 column to 60000x60000 before shrinking it.
    tall = noise(1, 60_000, seed=1)
    with pytest.raises(KernelArgumentError, match="intermediate"):
        resize_rgb(tall, 60_000, 1, "pil_bicubic", pass_order="pillow12")
    want = pillow(tall, 60_000, 1, "pil_bicubic", "pillow13")
    np.testing.assert_array_equal(resize_rgb(tall, 60_000, 1, "pil_bicubic"), want)
