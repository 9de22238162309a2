"""`resample: "pil"` against HuggingFace's `Qwen2VLImageProcessorPil`, bit for bit: the same
decoded RGB image into both, `pixel_values` compared as float32 bits, grids compared exactly."""

from __future__ import annotations

import numpy as np
import pytest
from _qwen_refs import (
    PHOTOS,
    QWEN2,
    QWEN3,
    as_bits,
    gradient,
    hf_pil_processor,
    hf_reference,
    noise,
    photo,
)
from PIL import Image
from sglang_mm_qwen_vl import QwenVLFamily, QwenVLParams

from sglang_mm_core.errors import KernelArgumentError
from sglang_mm_core.plugin import CompactTensor

PARAM_SETS = {"qwen2": QWEN2, "qwen3": QWEN3}


def _family(params: dict, **extra) -> QwenVLFamily:
    return QwenVLFamily(QwenVLParams(**params, resample="pil", **extra))


def _assert_same(fam: QwenVLFamily, params: dict, image: Image.Image, threads: int = 1) -> None:
    want_pv, want_grid = hf_reference(hf_pil_processor(params), image)
    item = fam.process_item(np.asarray(image), threads=threads)
    got_pv = item.feature.array
    got_grid = item.aux["image_grid_thw"].array
    np.testing.assert_array_equal(got_grid, want_grid)
    assert got_grid.dtype == np.int64 and got_grid.shape == (1, 3)
    assert got_pv.shape == want_pv.shape and got_pv.dtype == np.float32
    np.testing.assert_array_equal(as_bits(got_pv), as_bits(want_pv))
    t, gh, gw = (int(x) for x in want_grid[0])
    ps = params["patch_size"]
    assert item.geometry.grid == (t, gh, gw)
    assert (item.geometry.height, item.geometry.width) == (gh * ps, gw * ps)
    # The compact form expands to the reference's bits too, with the same aux and geometry.
    compact = fam.process_item(np.asarray(image), threads=threads, compact=True)
    assert isinstance(compact.feature, CompactTensor)
    np.testing.assert_array_equal(as_bits(compact.feature.expand().array), as_bits(want_pv))
    assert compact.geometry == item.geometry
    np.testing.assert_array_equal(compact.aux["image_grid_thw"].array, want_grid)


@pytest.mark.parametrize("which", sorted(PARAM_SETS))
@pytest.mark.parametrize("name", PHOTOS)
def test_photos(name, which):
    params = PARAM_SETS[which]
    _assert_same(_family(params), params, photo(name))


# (width, height) -> what it exercises, for factor 28 with Qwen2's bounds.
QWEN2_EDGES = [
    (56, 56),  # exact multiple inside the bounds: no resize at all
    (57, 83),  # rounds to the nearest multiple, both directions
    (42, 70),  # ties at factor/2: 1.5 -> 2 and 2.5 -> 2 (half to even)
    (14, 98),  # 0.5 -> 0 and 3.5 -> 4; then the min_pixels branch
    (20, 20),  # upscale through min_pixels
    (13, 10),  # both sides below factor/2
    (1, 1),
    (2, 400),  # aspect ratio exactly 200 (accepted)
    (400, 2),
    (700, 70),
    (30, 1000),
    (641, 479),
]
QWEN3_EDGES = [(256, 256), (48, 80), (16, 16), (300, 7), (7, 1400), (1920, 1080), (33, 17)]


@pytest.mark.parametrize("wh", QWEN2_EDGES)
@pytest.mark.parametrize("kind", ["noise", "gradient"])
def test_qwen2_edge_sizes(wh, kind):
    image = noise(*wh, seed=wh[0] * 7 + wh[1]) if kind == "noise" else gradient(*wh)
    _assert_same(_family(QWEN2), QWEN2, image)


@pytest.mark.parametrize("wh", QWEN3_EDGES)
def test_qwen3_edge_sizes(wh):
    _assert_same(_family(QWEN3), QWEN3, noise(*wh, seed=wh[0] + wh[1]))


# Small max_pixels reach the downscale branch (and Pillow 13's vertical-first pass) on small
# images, so the suite stays quick.
SMALL_MAX = {**QWEN2, "max_pixels": 28 * 28 * 100}


@pytest.mark.parametrize(
    "wh",
    [
        (300, 1500),  # tall downscale: Pillow 13 runs the vertical pass first
        (1500, 300),  # wide downscale: horizontal first
        (600, 500),
        (1000, 5),  # ratio 200 with a downscale
        (333, 333),
    ],
)
def test_downscale_branch(wh):
    _assert_same(_family(SMALL_MAX), SMALL_MAX, noise(*wh, seed=3))
    _assert_same(_family(SMALL_MAX), SMALL_MAX, photo("astronaut.png").resize(wh))


def test_qwen3_downscale_branch():
    params = {**QWEN3, "min_pixels": 32 * 32, "max_pixels": 32 * 32 * 64}
    _assert_same(_family(params), params, photo("coffee.png"))


def test_kernel_threads_do_not_change_the_result():
    _assert_same(_family(SMALL_MAX), SMALL_MAX, photo("chelsea.png"), threads=2)
    _assert_same(_family(QWEN2), QWEN2, photo("rocket.jpg"), threads=3)


def test_pillow12_pass_order():
    """`pillow12` equals a width-only Pillow resize followed by a height-only one; the HF
    processor then normalizes and patchifies the already-sized image unchanged."""
    image = noise(300, 1500, seed=11)
    fam12 = _family(SMALL_MAX, pil_pass_order="pillow12")
    fam13 = _family(SMALL_MAX)
    geo = fam12.process_item(np.asarray(image)).geometry
    h, w = geo.height, geo.width
    two_pass = image.resize((w, image.height), Image.BICUBIC).resize((w, h), Image.BICUBIC)
    identity = {**SMALL_MAX, "min_pixels": 28 * 28, "max_pixels": 10**9}
    want_pv, _ = hf_reference(hf_pil_processor(identity), two_pass)
    got12 = fam12.process_item(np.asarray(image)).feature.array
    np.testing.assert_array_equal(as_bits(got12), as_bits(want_pv))
    got13 = fam13.process_item(np.asarray(image)).feature.array
    assert not np.array_equal(got12, got13), "this case must depend on the pass order"


def test_aspect_ratio_201_refused_by_both():
    image = noise(402, 2, seed=1)
    with pytest.raises(ValueError, match="aspect ratio"):
        hf_reference(hf_pil_processor(QWEN2), image)
    with pytest.raises(KernelArgumentError, match=r"402x2 .*aspect ratio 201"):
        _family(QWEN2).process_item(np.asarray(image))
