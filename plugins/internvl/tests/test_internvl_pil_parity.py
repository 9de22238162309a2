"""`resample: "pil"` against HuggingFace's `GotOcr2ImageProcessorPil`, live: every tile and the
thumbnail, bit for bit, and `num_patches`, on the photo corpus and the family's edge cases
(grid-choice ties both ways, min/max patches, images smaller than a tile, extreme aspect
ratios); and the model card's `load_image` mode against its restatement on Pillow + numpy."""

from __future__ import annotations

import numpy as np
import pytest
from _internvl_refs import (
    MEAN,
    PHOTOS,
    STD,
    as_bits,
    gradient,
    hf_pil_processor,
    hf_reference,
    model_card_tiles,
    noise,
    photo,
)
from sglang_mm_internvl import InternVLFamily, InternVLParams

from sglang_mm_core.conformance import process_item_and_compact


def family(**kw) -> InternVLFamily:
    return InternVLFamily(InternVLParams(resample="pil", **kw))


def check(fam: InternVLFamily, image, ref) -> None:
    want, want_patches = hf_reference(ref, image)
    item = process_item_and_compact(fam, np.asarray(image))
    got = item.feature.array
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(as_bits(got), as_bits(want))
    np.testing.assert_array_equal(item.aux["num_patches"].array, np.array(want_patches))
    rows, cols, thumb, size = item.geometry.grid
    assert rows * cols + thumb == want_patches[0] and size == fam.params.tile_size


@pytest.mark.parametrize("name", PHOTOS)
def test_photos(name):
    check(family(), photo(name), hf_pil_processor())


# (width, height, params): ties flipping both ways, a tile's size and smaller, extreme aspect
# ratios, min_patches above 1, max_patches 1 (one tile, no thumbnail) and 12.
EDGES = [
    (1, 1, {}),
    (5, 3, {}),
    (300, 200, {}),
    (448, 448, {}),
    (633, 633, {}),
    (634, 634, {}),
    (1267, 633, {}),
    (1268, 634, {}),
    (633, 1267, {}),
    (634, 1268, {}),
    (546, 364, {"max_patches": 4}),
    (549, 366, {"max_patches": 4}),
    (384, 512, {"max_patches": 4}),
    (390, 520, {"max_patches": 4}),
    (1, 2000, {}),
    (2000, 1, {}),
    (1920, 1080, {}),
    (640, 480, {"max_patches": 1}),
    (1, 2000, {"max_patches": 1}),
    (640, 480, {"min_patches": 3}),
    (300, 300, {"min_patches": 4, "max_patches": 6}),
]


@pytest.mark.parametrize(("w", "h", "kw"), EDGES, ids=[f"{w}x{h}-{kw}" for w, h, kw in EDGES])
def test_edge_cases(w, h, kw):
    image = gradient(w, h) if (w * h) % 2 else noise(w, h, seed=w + h)
    ref = hf_pil_processor(min_patches=kw.get("min_patches", 1), **_max(kw))
    check(family(**kw), image, ref)


def _max(kw: dict) -> dict:
    return {"max_patches": kw["max_patches"]} if "max_patches" in kw else {}


@pytest.mark.parametrize("tile", [28, 56])
@pytest.mark.parametrize("seed", range(6))
def test_small_tiles_random_sizes(tile, seed):
    """Small tiles, random sizes and bounds: many grids cheaply (every pass combination of the
    resampler: up, down and mixed on each axis)."""
    rng = np.random.default_rng(seed)
    w, h = (int(v) for v in rng.integers(1, 6 * tile, size=2))
    lo = int(rng.integers(1, 4))
    hi = int(rng.integers(lo, 13))
    kw = {"tile_size": tile, "min_patches": lo, "max_patches": hi}
    ref = hf_pil_processor(tile=tile, min_patches=lo, max_patches=hi)
    check(family(**kw), noise(w, h, seed=seed), ref)


def test_threads_do_not_change_bits():
    fam = family()
    arr = np.asarray(photo("rocket.jpg"))
    one = fam.process_item(arr, threads=1).feature.array
    for threads in (2, 5):
        np.testing.assert_array_equal(
            as_bits(fam.process_item(arr, threads=threads).feature.array), as_bits(one)
        )


def test_normalize_table_is_hfs_rescale_and_normalize():
    """The table the kernel (and a later compact form) uses is HF's numpy arithmetic on each
    of the 256 sample values."""
    table = family().normalize_table()
    v = np.arange(256, dtype=np.uint8)
    x = (v.astype(np.float64) * (1 / 255)).astype(np.float32)
    want = (x[None, :] - np.asarray(MEAN, np.float32)[:, None]) / np.asarray(STD, np.float32)[
        :, None
    ]
    np.testing.assert_array_equal(as_bits(table), as_bits(want.astype(np.float32)))


MODEL_CARD_CASES = [
    ("photo", "chelsea.png", {}),
    ("photo", "rocket.jpg", {}),
    ("photo", "astronaut.png", {"max_patches": 6}),
    ("noise", (634, 634), {}),
    ("noise", (1268, 634), {}),
    ("noise", (1, 2000), {}),
    ("noise", (640, 480), {"max_patches": 1}),
    ("noise", (640, 480), {"min_patches": 3}),
]


@pytest.mark.parametrize(
    ("kind", "src", "kw"), MODEL_CARD_CASES, ids=[str(c[1]) + str(c[2]) for c in MODEL_CARD_CASES]
)
def test_model_card_mode(kind, src, kw):
    image = photo(src) if kind == "photo" else noise(*src, seed=3)
    fam = family(tiling="model_card", **kw)
    want = model_card_tiles(image, 448, kw.get("min_patches", 1), kw.get("max_patches", 12))
    item = process_item_and_compact(fam, np.asarray(image))
    np.testing.assert_array_equal(as_bits(item.feature.array), as_bits(want))
    assert item.aux["num_patches"].array.tolist() == [want.shape[0]]
